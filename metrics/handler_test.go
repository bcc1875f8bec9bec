package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

func TestHandlerAndRuntimeCollectors(t *testing.T) {
	plain := prometheus.NewRegistry()
	m, err := metrics.New(plain, nil)
	require.NoError(t, err)
	m.SetMaxWorkers("c", 2)
	body := scrape(t, metrics.Handler(plain))
	assert.Contains(t, body, `controller_runtime_max_concurrent_reconciles{controller="c"} 2`)
	assert.NotContains(t, body, "go_goroutines", "runtime collectors only when asked")

	// A registry that already has one of the runtime collectors keeps it.
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	_, err = metrics.New(reg, metrics.WithRuntimeCollectors())
	require.NoError(t, err)
	body = scrape(t, metrics.Handler(reg))
	assert.Contains(t, body, "go_goroutines")
	assert.Contains(t, body, "process_cpu_seconds_total")
}

// refusing rejects one collector by name.
type refusing struct {
	prometheus.Registerer
	name string
}

func (r refusing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	refused := false
	for d := range ch { // drained whole, so that Describe returns
		refused = refused || strings.Contains(d.String(), r.name)
	}
	if refused {
		return errors.New("refused")
	}
	return r.Registerer.Register(c)
}

func TestRuntimeCollectorRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := metrics.New(refusing{Registerer: reg, name: "process_cpu_seconds_total"}, metrics.WithRuntimeCollectors())
	require.ErrorContains(t, err, "refused")
	families, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, families, "a failed New leaves the registry as it found it")
}
