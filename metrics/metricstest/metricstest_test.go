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
