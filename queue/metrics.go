package queue

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Outcome is how one reconcile ended, as reported to Metrics. Its values
// match the "result" label of controller-runtime's
// controller_runtime_reconcile_total so that dashboards carry over.
type Outcome string

const (
	// OutcomeSuccess: nil error and a zero Result.
	OutcomeSuccess Outcome = "success"
	// OutcomeRequeueAfter: nil error and a positive Result.RequeueAfter.
	OutcomeRequeueAfter Outcome = "requeue_after"
	// OutcomeError: a non-nil error, a recovered panic, or a terminal error.
	OutcomeError Outcome = "error"
	// OutcomeRequeue: an error matching reconcile.ErrStaleCache; the key
	// runs again, after its backoff, and nothing failed.
	OutcomeRequeue Outcome = "requeue"
)

// Observation describes one finished reconcile.
type Observation struct {
	// Outcome is how the reconcile ended.
	Outcome Outcome
	// Duration is the wall time from the worker taking the key to the end
	// of Reconcile (the same clock readings as the workqueue's
	// work_duration); zero when the controller has no metrics.
	Duration time.Duration
	// Terminal is set when the error was terminal (not retried).
	Terminal bool
	// Panicked is set when Reconcile panicked; Outcome is then OutcomeError.
	Panicked bool
	// TimedOut is set when the per-reconcile timeout (ReconcileTimeout)
	// expired during the reconcile, whatever the reconcile returned.
	TimedOut bool
}

// Metrics receives the worker loop's measurements. Every method may be
// called from many goroutines at once. The embedded workqueue.MetricsProvider
// is handed to the controller's own workqueue (never installed process-wide);
// its metrics are created with the controller's name.
//
// The metrics package provides a Prometheus implementation; a controller
// without WithMetrics records nothing.
type Metrics interface {
	workqueue.MetricsProvider

	// ObserveReconcile records one finished reconcile of the named controller.
	ObserveReconcile(controller string, o Observation)
	// AddActiveWorkers adds delta (+1 or -1) to the number of workers of the
	// named controller that are inside Reconcile right now.
	AddActiveWorkers(controller string, delta int)
	// SetMaxWorkers records the configured number of workers.
	SetMaxWorkers(controller string, n int)
}

// NoopMetrics is a Metrics that records nothing: what a controller without
// WithMetrics uses. Embed it in a Metrics that records only some of the
// measurements, such as a test double.
type NoopMetrics struct{}

var _ Metrics = NoopMetrics{}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

// ObserveReconcile does nothing.
func (NoopMetrics) ObserveReconcile(string, Observation) {}

// AddActiveWorkers does nothing.
func (NoopMetrics) AddActiveWorkers(string, int) {}

// SetMaxWorkers does nothing.
func (NoopMetrics) SetMaxWorkers(string, int) {}

// NewDepthMetric returns a metric that records nothing.
func (NoopMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return noopMetric{} }

// NewAddsMetric returns a metric that records nothing.
func (NoopMetrics) NewAddsMetric(string) workqueue.CounterMetric { return noopMetric{} }

// NewLatencyMetric returns a metric that records nothing.
func (NoopMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return noopMetric{} }

// NewWorkDurationMetric returns a metric that records nothing.
func (NoopMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noopMetric{} }

// NewUnfinishedWorkSecondsMetric returns a metric that records nothing.
func (NoopMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}

// NewLongestRunningProcessorSecondsMetric returns a metric that records nothing.
func (NoopMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}

// NewRetriesMetric returns a metric that records nothing.
func (NoopMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noopMetric{} }
