package operator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// docs/operator.md refuses "a percent-encoded key" of
// $OTEL_RESOURCE_ATTRIBUTES (the SDK would keep it encoded). A key that
// merely holds a percent sign and is not percent-encoded (no %XX escape)
// is a valid key (the specification does not decode keys; "%" is a token
// character of W3C Baggage), and the SDK's own merge puts it in the
// resource as it is: it should be accepted, not refused.
func TestResourceKeyWithAPercentSignThatIsNotAnEscape(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "discount%=10,deployment.environment=prod")
	f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
	require.NoError(t, f.Validate(), "a key that is not percent-encoded")
	tp, err := f.TracerProvider()
	require.NoError(t, err)
	defer func() { _ = tp.(*sdktrace.TracerProvider).Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "x")
	span.End()
	got := map[string]string{}
	for _, kv := range span.(sdktrace.ReadOnlySpan).Resource().Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "10", got["discount%"], "%v", got)
}
