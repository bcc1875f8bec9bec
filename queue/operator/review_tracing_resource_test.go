package operator

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// review: TracerProvider documents service.name as
// $OTEL_SERVICE_NAME, else the binary's name, with
// $OTEL_RESOURCE_ATTRIBUTES. One entry of OTEL_RESOURCE_ATTRIBUTES that
// does not parse makes resource.New return its (partial, usable) resource
// with an error, and the provider throws the whole resource away for
// resource.Default(): the operator's spans are then exported as
// "unknown_service:<binary>" instead of the documented default.
func TestReviewTracingResourceKeepsServiceNameOnABadAttribute(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,broken")
	f := &Flags{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--tracing-endpoint=http://127.0.0.1:1"}))
	tp, err := f.TracerProvider()
	require.NoError(t, err)
	defer func() { _ = tp.(*sdktrace.TracerProvider).Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "x")
	span.End()
	res := span.(sdktrace.ReadOnlySpan).Resource()
	got := map[string]string{}
	for _, kv := range res.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	require.Equal(t, filepath.Base(os.Args[0]), got["service.name"], "resource: %v", got)
	require.Equal(t, "prod", got["deployment.environment"], "resource: %v", got)
}
