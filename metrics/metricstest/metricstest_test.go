package metricstest_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue"
)

func TestValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	m.SetMaxWorkers("c", 3)
	m.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: time.Millisecond})
	m.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: time.Millisecond})
	summary := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "h"})
	summary.Observe(1)
	untyped := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "u", Help: "h"}, func() float64 { return 7 })
	reg.MustRegister(summary, untyped)

	assert.Equal(t, 2.0, metricstest.Value(t, reg, "controller_runtime_reconcile_total", map[string]string{"controller": "c", "result": "success"}))
	assert.Equal(t, 3.0, metricstest.Value(t, reg, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "c"}))
	assert.Equal(t, 2.0, metricstest.Value(t, reg, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": "c"}), "a histogram's count")
	assert.Equal(t, 1.0, metricstest.Value(t, reg, "s", map[string]string{}))
	assert.Equal(t, 7.0, metricstest.Value(t, reg, "u", nil))

	_, err = metricstest.Lookup(reg, "controller_runtime_reconcile_total", map[string]string{"controller": "other"})
	assert.ErrorContains(t, err, `no series controller_runtime_reconcile_total{controller="other"}; there are: {controller="c",result="error"}`)
	_, err = metricstest.Lookup(reg, "missing", nil)
	assert.EqualError(t, err, "no series of missing")
}

// Labels select series as the equality matchers of a PromQL selector do.
func TestValueSelectsLikePromQL(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	m.SetMaxWorkers("c", 3)
	m.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: time.Millisecond})
	m.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: time.Millisecond})
	depth := m.NewDepthMetric("c") // priority=""
	for range 4 {
		depth.Inc()
	}
	tiers := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tiers", Help: "h"}, []string{"app", "tier"})
	tiers.WithLabelValues("web", "").Set(1)
	tiers.WithLabelValues("web", "gold").Set(2)
	reg.MustRegister(tiers)

	tests := []struct {
		name    string
		metric  string
		labels  map[string]string
		want    float64
		wantErr string
	}{
		{name: "every label given", metric: "workqueue_depth",
			labels: map[string]string{"name": "c", "controller": "c", "priority": ""}, want: 4},
		{name: "an empty label left out", metric: "workqueue_depth",
			labels: map[string]string{"name": "c", "controller": "c"}, want: 4},
		{name: "labels left out are not constrained", metric: "workqueue_depth",
			labels: map[string]string{"name": "c"}, want: 4},
		{name: "no labels and one series", metric: "workqueue_depth", want: 4},
		{name: "an empty value selects the series without the label", metric: "controller_runtime_max_concurrent_reconciles",
			labels: map[string]string{"controller": "c", "shard": ""}, want: 3},
		{name: "an empty value selects the series with an empty label", metric: "tiers",
			labels: map[string]string{"app": "web", "tier": ""}, want: 1},
		{name: "a value selects the series with that value", metric: "tiers",
			labels: map[string]string{"app": "web", "tier": "gold"}, want: 2},
		{name: "several series selected", metric: "tiers", labels: map[string]string{"app": "web"},
			wantErr: `2 series tiers{app="web"}, give more labels to select one: {app="web",tier=""}, {app="web",tier="gold"}`},
		{name: "a value the series lacks", metric: "controller_runtime_max_concurrent_reconciles",
			labels:  map[string]string{"controller": "c", "shard": "a"},
			wantErr: `no series controller_runtime_max_concurrent_reconciles{controller="c",shard="a"}; there are: {controller="c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := metricstest.Lookup(reg, tt.metric, tt.labels)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want, metricstest.Value(t, reg, tt.metric, tt.labels))
		})
	}
}
