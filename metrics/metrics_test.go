package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue"
)

// The help texts, repeated here so that a change to them is a visible change.
const (
	helpTotal      = "Number of finished reconciles, by controller and result (success, error, requeue_after, requeue)."
	helpErrors     = "Number of reconciles that ended with an error, terminal errors and recovered panics included, by controller."
	helpTerminal   = "Number of reconciles that ended with a terminal error, which is not retried, by controller."
	helpPanics     = "Number of reconciles that panicked, by controller."
	helpTimeouts   = "Number of reconciles whose per-reconcile timeout expired, by controller."
	helpMax        = "Configured number of workers, the most reconciles that run at once, by controller."
	helpActive     = "Number of workers running a reconcile right now, by controller."
	helpDepth      = "Number of items waiting in the workqueue, by queue name and priority."
	helpAdds       = "Number of adds handled by the workqueue, by queue name."
	helpRetries    = "Number of items added to the workqueue with a delay (rate-limited retries and delayed adds), by queue name."
	helpLongest    = "Seconds the longest-running worker of the workqueue has been processing its item, by queue name."
	helpUnfinished = "Seconds of work in progress that work_duration has not observed yet, by queue name. " +
		"Large values point to stuck workers; the rate at which it grows approximates the number of stuck workers."
)

// controller-runtime's reconcile_time_seconds buckets.
var wantReconcileBuckets = []float64{
	0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
	0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5,
	5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
}

// controller-runtime's workqueue duration buckets: 10ns ... 1000s.
var wantWorkqueueBuckets = []float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}

func newRecorder(t *testing.T) (*metrics.Recorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	rec, err := metrics.New(reg)
	require.NoError(t, err)
	return rec, reg
}

func labelsOf(pairs map[string]string) string {
	keys := make([]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+pairs[k])
	}
	return strings.Join(parts, ",")
}

// histogram returns the sample count, sum and bucket upper bounds of the
// histogram series name{labels}; ok is false when there is no such series.
func histogram(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (count uint64, sum float64, bounds []float64, ok bool) {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if labelsOf(got) != labelsOf(labels) {
				continue
			}
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			return h.GetSampleCount(), h.GetSampleSum(), bounds, true
		}
	}
	return 0, 0, nil, false
}

func TestNewRejectsNilRegisterer(t *testing.T) {
	rec, err := metrics.New(nil)
	require.Error(t, err)
	assert.Nil(t, rec)
	assert.Contains(t, err.Error(), "registerer is nil")
}

// TestMetricFamilies pins every metric's name, type and label names to
// controller-runtime's.
func TestMetricFamilies(t *testing.T) {
	rec, reg := newRecorder(t)
	// Create one series in every family.
	rec.SetMaxWorkers("c", 1)
	rec.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess})
	rec.NewDepthMetric("c").Inc()
	rec.NewAddsMetric("c").Inc()
	rec.NewLatencyMetric("c").Observe(1)
	rec.NewWorkDurationMetric("c").Observe(1)
	rec.NewUnfinishedWorkSecondsMetric("c").Set(1)
	rec.NewLongestRunningProcessorSecondsMetric("c").Set(1)
	rec.NewRetriesMetric("c").Inc()
	rec.SetMembers("g", 3)
	rec.SetOwnedKeys("g", "c", 10)
	rec.IncHandoffs("g")
	rec.ObserveTakeover("g", 5*time.Second)
	rec.SetClusterReady("f", "east", true)
	rec.IncEngageFailures("f", "east")
	rec.ObserveClusterReconcile("f", "east", time.Millisecond, false)
	rec.SetAPIWatchState("east", "widgets.example.com/v1", optional.Running)
	rec.IncAPIWatchStops("east", "widgets.example.com/v1")
	rec.Webhook("/validate", http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/validate", nil))

	want := map[string]string{
		"controller_runtime_reconcile_total":                 "COUNTER controller,result",
		"controller_runtime_reconcile_errors_total":          "COUNTER controller",
		"controller_runtime_terminal_reconcile_errors_total": "COUNTER controller",
		"controller_runtime_reconcile_panics_total":          "COUNTER controller",
		"controller_runtime_reconcile_timeouts_total":        "COUNTER controller",
		"controller_runtime_reconcile_time_seconds":          "HISTOGRAM controller",
		"controller_runtime_max_concurrent_reconciles":       "GAUGE controller",
		"controller_runtime_active_workers":                  "GAUGE controller",
		"workqueue_depth":                                    "GAUGE controller,name,priority",
		"workqueue_adds_total":                               "COUNTER controller,name",
		"workqueue_queue_duration_seconds":                   "HISTOGRAM controller,name",
		"workqueue_work_duration_seconds":                    "HISTOGRAM controller,name",
		"workqueue_unfinished_work_seconds":                  "GAUGE controller,name",
		"workqueue_longest_running_processor_seconds":        "GAUGE controller,name",
		"workqueue_retries_total":                            "COUNTER controller,name",
		"ctrlkit_shard_members":                              "GAUGE group",
		"ctrlkit_shard_owned_keys":                           "GAUGE controller,group",
		"ctrlkit_shard_handoffs_total":                       "COUNTER group",
		"ctrlkit_shard_takeover_seconds":                     "HISTOGRAM group",
		"ctrlkit_cluster_ready":                              "GAUGE cluster,fleet",
		"ctrlkit_cluster_engage_failures_total":              "COUNTER cluster,fleet",
		"ctrlkit_cluster_reconciles_total":                   "COUNTER cluster,fleet,result",
		"ctrlkit_cluster_reconcile_seconds":                  "HISTOGRAM cluster,fleet",
		"ctrlkit_api_watch_state":                            "GAUGE cluster,resource,state",
		"ctrlkit_api_watch_stops_total":                      "COUNTER cluster,resource",
		"controller_runtime_webhook_latency_seconds":         "HISTOGRAM webhook",
		"controller_runtime_webhook_requests_total":          "COUNTER code,webhook",
		"controller_runtime_webhook_requests_in_flight":      "GAUGE webhook",
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]string{}
	for _, mf := range families {
		require.NotEmpty(t, mf.GetMetric(), mf.GetName())
		var names []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			names = append(names, lp.GetName())
		}
		sort.Strings(names)
		got[mf.GetName()] = mf.GetType().String() + " " + strings.Join(names, ",")
		assert.NotEmpty(t, mf.GetHelp(), mf.GetName())
	}
	assert.Equal(t, want, got)
}

func TestHistogramBuckets(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.ObserveReconcile("c", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: 30 * time.Millisecond})
	rec.NewLatencyMetric("q").Observe(0.5)
	rec.NewWorkDurationMetric("q").Observe(2)

	tests := []struct {
		name    string
		labels  map[string]string
		buckets []float64
		sum     float64
	}{
		{"controller_runtime_reconcile_time_seconds", map[string]string{"controller": "c"}, wantReconcileBuckets, 0.03},
		{"workqueue_queue_duration_seconds", map[string]string{"name": "q", "controller": "q"}, wantWorkqueueBuckets, 0.5},
		{"workqueue_work_duration_seconds", map[string]string{"name": "q", "controller": "q"}, wantWorkqueueBuckets, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			count, sum, bounds, ok := histogram(t, reg, tc.name, tc.labels)
			require.True(t, ok)
			assert.Equal(t, uint64(1), count)
			assert.InDelta(t, tc.sum, sum, 1e-9)
			require.Len(t, bounds, len(tc.buckets))
			assert.InEpsilonSlice(t, tc.buckets, bounds, 1e-9)
		})
	}
}

func TestSetMaxWorkersCreatesZeroSeries(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.AddActiveWorkers("c", 1)
	rec.SetMaxWorkers("c", 4)

	want := `
# HELP controller_runtime_reconcile_total ` + helpTotal + `
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="c",result="error"} 0
controller_runtime_reconcile_total{controller="c",result="requeue"} 0
controller_runtime_reconcile_total{controller="c",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="c",result="success"} 0
# HELP controller_runtime_reconcile_errors_total ` + helpErrors + `
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="c"} 0
# HELP controller_runtime_terminal_reconcile_errors_total ` + helpTerminal + `
# TYPE controller_runtime_terminal_reconcile_errors_total counter
controller_runtime_terminal_reconcile_errors_total{controller="c"} 0
# HELP controller_runtime_reconcile_panics_total ` + helpPanics + `
# TYPE controller_runtime_reconcile_panics_total counter
controller_runtime_reconcile_panics_total{controller="c"} 0
# HELP controller_runtime_reconcile_timeouts_total ` + helpTimeouts + `
# TYPE controller_runtime_reconcile_timeouts_total counter
controller_runtime_reconcile_timeouts_total{controller="c"} 0
# HELP controller_runtime_max_concurrent_reconciles ` + helpMax + `
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="c"} 4
# HELP controller_runtime_active_workers ` + helpActive + `
# TYPE controller_runtime_active_workers gauge
controller_runtime_active_workers{controller="c"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))
}

func TestObserveReconcile(t *testing.T) {
	tests := []struct {
		name string
		obs  queue.Observation
		// counts of the result series success, error, requeue_after, requeue
		success, errored, requeueAfter   float64
		requeue                          float64
		errs, terminal, panics, timeouts float64
	}{
		{name: "success", obs: queue.Observation{Outcome: queue.OutcomeSuccess}, success: 1},
		{name: "requeue after", obs: queue.Observation{Outcome: queue.OutcomeRequeueAfter}, requeueAfter: 1},
		{name: "requeue on a stale cache", obs: queue.Observation{Outcome: queue.OutcomeRequeue}, requeue: 1},
		{name: "error", obs: queue.Observation{Outcome: queue.OutcomeError}, errored: 1, errs: 1},
		{
			name:    "terminal error",
			obs:     queue.Observation{Outcome: queue.OutcomeError, Terminal: true},
			errored: 1, errs: 1, terminal: 1,
		},
		{
			name:    "panic",
			obs:     queue.Observation{Outcome: queue.OutcomeError, Panicked: true},
			errored: 1, errs: 1, panics: 1,
		},
		{
			name:    "timeout with error",
			obs:     queue.Observation{Outcome: queue.OutcomeError, TimedOut: true},
			errored: 1, errs: 1, timeouts: 1,
		},
		{
			name:    "timeout with success",
			obs:     queue.Observation{Outcome: queue.OutcomeSuccess, TimedOut: true},
			success: 1, timeouts: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			rec.SetMaxWorkers("c", 1)
			tc.obs.Duration = 1500 * time.Millisecond
			rec.ObserveReconcile("c", tc.obs)

			want := `
# HELP controller_runtime_reconcile_total ` + helpTotal + `
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="c",result="error"} ` + fmtFloat(tc.errored) + `
controller_runtime_reconcile_total{controller="c",result="requeue"} ` + fmtFloat(tc.requeue) + `
controller_runtime_reconcile_total{controller="c",result="requeue_after"} ` + fmtFloat(tc.requeueAfter) + `
controller_runtime_reconcile_total{controller="c",result="success"} ` + fmtFloat(tc.success) + `
# HELP controller_runtime_reconcile_errors_total ` + helpErrors + `
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="c"} ` + fmtFloat(tc.errs) + `
# HELP controller_runtime_terminal_reconcile_errors_total ` + helpTerminal + `
# TYPE controller_runtime_terminal_reconcile_errors_total counter
controller_runtime_terminal_reconcile_errors_total{controller="c"} ` + fmtFloat(tc.terminal) + `
# HELP controller_runtime_reconcile_panics_total ` + helpPanics + `
# TYPE controller_runtime_reconcile_panics_total counter
controller_runtime_reconcile_panics_total{controller="c"} ` + fmtFloat(tc.panics) + `
# HELP controller_runtime_reconcile_timeouts_total ` + helpTimeouts + `
# TYPE controller_runtime_reconcile_timeouts_total counter
controller_runtime_reconcile_timeouts_total{controller="c"} ` + fmtFloat(tc.timeouts) + `
`
			require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
				"controller_runtime_reconcile_total",
				"controller_runtime_reconcile_errors_total",
				"controller_runtime_terminal_reconcile_errors_total",
				"controller_runtime_reconcile_panics_total",
				"controller_runtime_reconcile_timeouts_total",
			))
			count, sum, _, ok := histogram(t, reg, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": "c"})
			require.True(t, ok)
			assert.Equal(t, uint64(1), count)
			assert.InDelta(t, 1.5, sum, 1e-9)
		})
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestActiveWorkers(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.AddActiveWorkers("c", 1)
	rec.AddActiveWorkers("c", 1)
	rec.AddActiveWorkers("c", -1)
	rec.AddActiveWorkers("d", 1)

	want := `
# HELP controller_runtime_active_workers ` + helpActive + `
# TYPE controller_runtime_active_workers gauge
controller_runtime_active_workers{controller="c"} 1
controller_runtime_active_workers{controller="d"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "controller_runtime_active_workers"))
}

func TestWorkqueueMetricsProvider(t *testing.T) {
	rec, reg := newRecorder(t)

	depth := rec.NewDepthMetric("foo")
	depth.Inc()
	depth.Inc()
	depth.Dec()
	adds := rec.NewAddsMetric("foo")
	adds.Inc()
	adds.Inc()
	rec.NewUnfinishedWorkSecondsMetric("foo").Set(2.5)
	rec.NewLongestRunningProcessorSecondsMetric("foo").Set(1.5)
	rec.NewRetriesMetric("foo").Inc()

	assert.InDelta(t, 1, testutil.ToFloat64(depth.(prometheus.Collector)), 0)
	assert.InDelta(t, 2, testutil.ToFloat64(adds.(prometheus.Collector)), 0)

	want := `
# HELP workqueue_depth ` + helpDepth + `
# TYPE workqueue_depth gauge
workqueue_depth{controller="foo",name="foo",priority=""} 1
# HELP workqueue_adds_total ` + helpAdds + `
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="foo",name="foo"} 2
# HELP workqueue_unfinished_work_seconds ` + helpUnfinished + `
# TYPE workqueue_unfinished_work_seconds gauge
workqueue_unfinished_work_seconds{controller="foo",name="foo"} 2.5
# HELP workqueue_longest_running_processor_seconds ` + helpLongest + `
# TYPE workqueue_longest_running_processor_seconds gauge
workqueue_longest_running_processor_seconds{controller="foo",name="foo"} 1.5
# HELP workqueue_retries_total ` + helpRetries + `
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="foo",name="foo"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"workqueue_depth", "workqueue_adds_total", "workqueue_unfinished_work_seconds",
		"workqueue_longest_running_processor_seconds", "workqueue_retries_total"))
}

// TestWithClientGoWorkqueue drives a real client-go queue that uses the
// Recorder as its metrics provider.
func TestWithClientGoWorkqueue(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	rec, reg := newRecorder(t)
	// Retries wait an hour, so the retried item stays out of the queue.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "foo", MetricsProvider: rec},
	)

	q.Add("a")
	q.Add("b")
	q.Add("a") // coalesced: not counted again
	item, shutdown := q.Get()
	require.False(t, shutdown)
	q.Done(item)
	q.AddRateLimited("c")

	depth := `
# HELP workqueue_depth ` + helpDepth + `
# TYPE workqueue_depth gauge
workqueue_depth{controller="foo",name="foo",priority=""} 1
# HELP workqueue_adds_total ` + helpAdds + `
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="foo",name="foo"} 2
# HELP workqueue_retries_total ` + helpRetries + `
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="foo",name="foo"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(depth),
		"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total"))
	labels := map[string]string{"name": "foo", "controller": "foo"}
	for _, name := range []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"} {
		count, _, _, ok := histogram(t, reg, name, labels)
		require.True(t, ok, name)
		assert.Equal(t, uint64(1), count, name)
	}

	q.ShutDown()
	assert.Eventually(t, func() bool { return goleak.Find(ignore) == nil }, 10*time.Second, 5*time.Millisecond)
}

func TestTwoControllersShareOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	shared, err := metrics.New(reg)
	require.NoError(t, err)
	// A second New on the same registry reuses the registered collectors.
	second, err := metrics.New(reg)
	require.NoError(t, err)
	// So does a New through a registerer that wraps the registry unchanged.
	wrapped, err := metrics.New(prometheus.WrapRegistererWith(nil, reg))
	require.NoError(t, err)

	for _, r := range []*metrics.Recorder{shared, second, wrapped} {
		r.SetMaxWorkers("a", 2)
		r.SetMaxWorkers("b", 3)
	}
	shared.ObserveReconcile("a", queue.Observation{Outcome: queue.OutcomeSuccess})
	second.ObserveReconcile("a", queue.Observation{Outcome: queue.OutcomeSuccess})
	wrapped.ObserveReconcile("b", queue.Observation{Outcome: queue.OutcomeError})
	shared.NewAddsMetric("a").Inc()
	second.NewAddsMetric("b").Inc()
	wrapped.NewAddsMetric("b").Inc()

	want := `
# HELP controller_runtime_reconcile_total ` + helpTotal + `
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="a",result="error"} 0
controller_runtime_reconcile_total{controller="a",result="requeue"} 0
controller_runtime_reconcile_total{controller="a",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="a",result="success"} 2
controller_runtime_reconcile_total{controller="b",result="error"} 1
controller_runtime_reconcile_total{controller="b",result="requeue"} 0
controller_runtime_reconcile_total{controller="b",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="b",result="success"} 0
# HELP controller_runtime_max_concurrent_reconciles ` + helpMax + `
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="a"} 2
controller_runtime_max_concurrent_reconciles{controller="b"} 3
# HELP workqueue_adds_total ` + helpAdds + `
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="a",name="a"} 1
workqueue_adds_total{controller="b",name="b"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"controller_runtime_reconcile_total", "controller_runtime_max_concurrent_reconciles", "workqueue_adds_total"))
}

// trackingRegisterer remembers which collectors are registered through it.
type trackingRegisterer struct {
	prometheus.Registerer
	live       map[prometheus.Collector]bool
	registered int
}

func (r *trackingRegisterer) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	if err == nil {
		r.live[c] = true
		r.registered++
	}
	return err
}

func (r *trackingRegisterer) Unregister(c prometheus.Collector) bool {
	ok := r.Registerer.Unregister(c)
	if ok {
		delete(r.live, c)
	}
	return ok
}

func TestNewConflictsWithDifferentCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	// Same name as one of ours, different help text (as controller-runtime's).
	other := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workqueue_retries_total",
		Help: "Something else",
	}, []string{"name", "controller"})
	require.NoError(t, reg.Register(other))
	tracking := &trackingRegisterer{Registerer: reg, live: map[prometheus.Collector]bool{}}

	rec, err := metrics.New(tracking)
	require.Error(t, err)
	assert.Nil(t, rec)
	assert.True(t, strings.HasPrefix(err.Error(), "metrics: register collector: "), err.Error())
	assert.Contains(t, err.Error(), "workqueue_retries_total")

	// Everything New registered before the conflict (all but the last of
	// its 15 collectors) was unregistered again.
	assert.Equal(t, 14, tracking.registered)
	assert.Empty(t, tracking.live)
}

// Controllers appear and record from many goroutines at once: every
// reconcile is counted under its own controller.
func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.SetMaxWorkers("c0", 8)
	done := make(chan struct{})
	for i := range 9 {
		go func() {
			defer func() { done <- struct{}{} }()
			controller := "c" + strconv.Itoa(i%3) // c1 and c2 first appear here, concurrently
			for range 100 {
				rec.AddActiveWorkers(controller, 1)
				rec.ObserveReconcile(controller, queue.Observation{Outcome: queue.OutcomeSuccess, Duration: time.Millisecond})
				rec.AddActiveWorkers(controller, -1)
			}
		}()
	}
	for range 9 {
		<-done
	}
	want := "\n# HELP controller_runtime_active_workers " + helpActive + "\n# TYPE controller_runtime_active_workers gauge\n"
	for c := range 3 {
		controller := "c" + strconv.Itoa(c)
		count, _, _, ok := histogram(t, reg, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": controller})
		require.True(t, ok, controller)
		assert.Equal(t, uint64(300), count, controller)
		assert.Equal(t, 300.0, metricstest.Value(t, reg, "controller_runtime_reconcile_total",
			map[string]string{"controller": controller, "result": "success"}), controller)
		want += `controller_runtime_active_workers{controller="` + controller + `"} 0` + "\n"
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "controller_runtime_active_workers"))
}

// A member cluster's series go when it leaves; the others' stay.
func TestForgetCluster(t *testing.T) {
	rec, reg := newRecorder(t)
	for _, cluster := range []string{"east", "west"} {
		rec.SetClusterReady("f", cluster, true)
		rec.IncEngageFailures("f", cluster)
		rec.ObserveClusterReconcile("f", cluster, time.Millisecond, true)
	}
	rec.ForgetCluster("f", "east")
	families, err := reg.Gather()
	require.NoError(t, err)
	clusters := map[string][]string{}
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), "ctrlkit_cluster_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "cluster" {
					clusters[mf.GetName()] = append(clusters[mf.GetName()], lp.GetValue())
				}
			}
		}
	}
	assert.Equal(t, map[string][]string{
		"ctrlkit_cluster_ready":                 {"west"},
		"ctrlkit_cluster_engage_failures_total": {"west"},
		"ctrlkit_cluster_reconciles_total":      {"west"},
		"ctrlkit_cluster_reconcile_seconds":     {"west"},
	}, clusters)
}
