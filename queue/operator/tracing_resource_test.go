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

// An entry of $OTEL_RESOURCE_ATTRIBUTES that does not parse is left out
// of the tracer provider's resource; the documented service.name default
// and the other attributes stay.
func TestTracingResourceKeepsServiceNameOnABadAttribute(t *testing.T) {
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
