package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/metrics"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	m.SetMaxWorkers("c", 2)

	plain, err := metrics.Handler(reg, nil)
	require.NoError(t, err)
	body := scrape(t, plain)
	assert.Contains(t, body, `controller_runtime_max_concurrent_reconciles{controller="c"} 2`)
	assert.NotContains(t, body, "go_goroutines", "runtime collectors only when asked")

	// A registry that already has one of the runtime collectors keeps it.
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	withRuntime, err := metrics.Handler(reg, metrics.WithRuntimeCollectors())
	require.NoError(t, err)
	body = scrape(t, withRuntime)
	assert.Contains(t, body, "go_goroutines")
	assert.Contains(t, body, "process_cpu_seconds_total")

	_, err = metrics.Handler(nil)
	assert.Error(t, err)
}
