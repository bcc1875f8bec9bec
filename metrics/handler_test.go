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

// A registry that already has a runtime collector keeps it, configured as
// it is, and New adds none of that kind.
func TestRuntimeCollectorsKeepExistingOfTheSameKind(t *testing.T) {
	tests := []struct {
		name     string
		existing prometheus.Collector
		// only is a metric that the existing collector serves and New's
		// own would not: it shows that the existing one was kept.
		only string
	}{
		{name: "Go collector with every runtime metric",
			existing: collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
			only:     "go_cpu_classes_gc_total_cpu_seconds_total"},
		{name: "Go collector without runtime.MemStats metrics",
			existing: collectors.NewGoCollector(collectors.WithGoCollections(collectors.GoRuntimeMetricsCollection))},
		{name: "Go collector as New makes it", existing: collectors.NewGoCollector()},
		{name: "process collector reporting errors",
			existing: collectors.NewProcessCollector(collectors.ProcessCollectorOpts{ReportErrors: true})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(tt.existing))
			m, err := metrics.New(reg, metrics.WithRuntimeCollectors())
			require.NoError(t, err)
			require.NotNil(t, m)

			families, err := reg.Gather()
			require.NoError(t, err, "no metric is served twice")
			names := map[string]bool{}
			for _, f := range families {
				names[f.GetName()] = true
			}
			assert.True(t, names["go_goroutines"], "a Go collector is registered")
			assert.True(t, names["process_start_time_seconds"], "a process collector is registered")
			if tt.only != "" {
				assert.True(t, names[tt.only], "the existing collector is kept")
			}
			assert.False(t, names["go_goroutines_ctrlkit_probe"] || names["process_start_time_seconds_ctrlkit_probe"],
				"no probe is left behind")
			assert.True(t, reg.Unregister(tt.existing), "the existing collector is still registered")
		})
	}
}

// A registry that refuses a runtime collector for another reason than a
// collector of the same kind makes New fail.
func TestRuntimeCollectorRefusedByName(t *testing.T) {
	for _, name := range []string{"go_memstats_alloc_bytes", "process_resident_memory_bytes"} {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			_, err := metrics.New(refusing{Registerer: reg, name: name}, metrics.WithRuntimeCollectors())
			require.ErrorContains(t, err, "refused")
			families, err := reg.Gather()
			require.NoError(t, err)
			assert.Empty(t, families, "a failed New leaves the registry as it found it")
		})
	}
}
