package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// docs/operator.md says "/v1/traces is added to the flag's URL and
// OTEL_EXPORTER_OTLP_ENDPOINT's" and that the flag stands for the
// variables. With a URL that has a path (a collector behind a gateway,
// http://gw/otlp), the variable posts to /otlp/v1/traces but the flag
// posts to /otlp: moving the same URL from the variable to the flag sends
// the spans somewhere else (a 404 at the gateway).
func TestEndpointFlagAndVariableSamePath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	url := collector.URL + "/otlp"

	export := func(f Flags) {
		tp, err := f.TracerProvider()
		require.NoError(t, err)
		_, span := tp.Tracer("test").Start(context.Background(), "s")
		span.End()
		require.NoError(t, f.tracer.ForceFlush(context.Background()))
		require.NoError(t, tp.(*sdktrace.TracerProvider).Shutdown(context.Background()))
	}
	clearOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	export(parse(t, Flags{}))
	clearOTelEnv(t)
	export(parse(t, Flags{}, "--tracing-endpoint="+url))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, paths, 2)
	assert.Equal(t, "/otlp/v1/traces", paths[0], "OTEL_EXPORTER_OTLP_ENDPOINT")
	assert.Equal(t, paths[0], paths[1], "--tracing-endpoint with the same URL")
}
