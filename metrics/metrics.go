// Package metrics exposes the worker loop's measurements as Prometheus
// metrics. Of the building blocks, it is the only package that depends on
// the Prometheus client (package operator, which serves it, does too);
// controllers that do not want metrics never import it. An operator built
// on operator.Flags gets a Recorder from the flags (Flags.Metrics), given to
// its controllers by Flags.ControllerOptions and served by Flags.Options.
//
// New registers one set of collectors on a Registerer chosen by the caller
// and returns a Recorder, which implements queue.Metrics and serves any
// number of controllers; each controller's series carry its name. It also
// implements shard.Metrics (see Sharding below).
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg, metrics.WithRuntimeCollectors())
//	if err != nil {
//		return err
//	}
//	// Give m to each controller (queue.WithMetrics(m)) and serve reg at
//	// /metrics: operator.WithMetrics(":8080", metrics.Handler(reg)).
//
// # Compatibility with controller-runtime
//
// Metric names, label names, histogram buckets and the meaning of every
// metric are those of controller-runtime (v0.25), so dashboards and alerts
// written for controller-runtime controllers work unchanged:
//
//	controller_runtime_reconcile_total{controller, result}        counter
//	controller_runtime_reconcile_errors_total{controller}         counter
//	controller_runtime_terminal_reconcile_errors_total{controller} counter
//	controller_runtime_reconcile_panics_total{controller}         counter
//	controller_runtime_reconcile_timeouts_total{controller}       counter
//	controller_runtime_reconcile_time_seconds{controller}         histogram
//	controller_runtime_max_concurrent_reconciles{controller}      gauge
//	controller_runtime_active_workers{controller}                 gauge
//	workqueue_depth{name, controller, priority}                   gauge
//	workqueue_adds_total{name, controller}                        counter
//	workqueue_queue_duration_seconds{name, controller}            histogram
//	workqueue_work_duration_seconds{name, controller}             histogram
//	workqueue_unfinished_work_seconds{name, controller}           gauge
//	workqueue_longest_running_processor_seconds{name, controller} gauge
//	workqueue_retries_total{name, controller}                     counter
//
// Webhook counts the requests of a webhook (package webhook) as
// controller-runtime does, by the path it is served at:
//
//	controller_runtime_webhook_latency_seconds{webhook}     histogram
//	controller_runtime_webhook_requests_total{webhook, code} counter
//	controller_runtime_webhook_requests_in_flight{webhook}  gauge
//
// controller_runtime_reconcile_time_seconds has the buckets 5ms, 10ms, 25ms,
// 50ms, 100ms to 500ms in steps of 50ms, 600ms to 1s in steps of 100ms,
// 1.25s to 2s in steps of 250ms, 2.5s to 5s in steps of 500ms, 6s to 10s in
// steps of 1s, then 15s, 20s, 25s, 30s, 40s, 50s and 60s. The two workqueue
// duration histograms have one bucket per power of ten from 10ns to 1000s.
//
// The result label takes the values of queue.Outcome: "success", "error",
// "requeue_after" and "requeue" (a cache behind the controller's own write,
// reconcile.ErrStaleCache). The workqueue metrics set
// both name and controller to the queue's name, which the worker loop sets to
// the controller's name; priority is always empty, as for controller-runtime
// queues without priorities. The two duration histograms also carry
// controller-runtime's native-histogram settings.
//
// # Sharding
//
// For a replica that shares its keys with others (package queue/shard,
// Config.Metrics), the Recorder also keeps series of its own, which
// controller-runtime has no counterpart for:
//
//	ctrlkit_shard_members{group}                 gauge
//	ctrlkit_shard_owned_keys{group, controller}  gauge
//	ctrlkit_shard_handoffs_total{group}          counter
//	ctrlkit_shard_takeover_seconds{group}        histogram
//
// # Fleets of clusters
//
// For an operator that reconciles many clusters (package
// queue/multicluster, WithMetrics), by fleet and member cluster; a
// cluster's series are deleted when it leaves the fleet or this replica:
//
//	ctrlkit_cluster_ready{fleet, cluster}                  gauge
//	ctrlkit_cluster_engage_failures_total{fleet, cluster}  counter
//	ctrlkit_cluster_reconciles_total{fleet, cluster, result} counter
//	ctrlkit_cluster_reconcile_seconds{fleet, cluster}      histogram
//
// # Watches of optional APIs
//
// For the watches of resources that may not be served (package
// informer/optional, WithMetrics), by APIs (WithName: the member cluster
// in a fleet, else empty) and resource ("widgets.example.com/v1"): the
// state gauge is 1 for the state the watch is in (waiting, running,
// stopped) and 0 for the others, and the counter counts the watches
// stopped because their API went away. A watch's series are deleted when
// its APIs shut down, and a member cluster's when it leaves the fleet
// (ForgetCluster):
//
//	ctrlkit_api_watch_state{cluster, resource, state}  gauge
//	ctrlkit_api_watch_stops_total{cluster, resource}   counter
//
// # Informer caches
//
// CacheSize counts what an informer's cache holds, which controller-runtime
// has no series for either:
//
//	ctrlkit_informer_cache_objects{informer}  gauge
//	ctrlkit_informer_cache_bytes{informer}    gauge
//
// Each value of informer counts the cache of one running informer: CacheSize
// refuses a name that already counts another (ErrCacheNameTaken), so two
// informers of one type, such as a namespace's and the cluster's, need names
// of their own.
//
// The help texts are ctrlkit's own. Prometheus refuses two collectors with
// the same name and different help texts on one registry, so a registry
// cannot hold both controller-runtime's collectors and these.
package metrics

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/queue"
)

// Label names.
const (
	labelController = "controller"
	labelResult     = "result"
	labelName       = "name"
	labelPriority   = "priority"
)

// reconcileTimeBuckets are the bucket upper bounds, in seconds, of
// controller_runtime_reconcile_time_seconds.
var reconcileTimeBuckets = []float64{
	0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
	0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5,
	5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
}

// workqueueDurationBuckets are the bucket upper bounds, in seconds, of
// workqueue_queue_duration_seconds and workqueue_work_duration_seconds:
// the powers of ten from 10ns to 1000s.
var workqueueDurationBuckets = prometheus.ExponentialBuckets(10e-9, 10, 12)

// Native histogram settings of the duration histograms.
const (
	nativeBucketFactor   = 1.1
	nativeMaxBuckets     = 100
	nativeMinResetPeriod = time.Hour
)

// Metric name prefixes.
const (
	controllerRuntimeNamespace = "controller_runtime"
	workqueueSubsystem         = "workqueue"
)

// Recorder records reconcile and workqueue metrics for any number of
// controllers into one set of Prometheus collectors. It implements
// queue.Metrics and is safe for concurrent use. Controller names must be
// unique among the controllers that share a Recorder (or a registry), or
// their series are merged.
type Recorder struct {
	reconcileTotal    *prometheus.CounterVec
	reconcileErrors   *prometheus.CounterVec
	terminalErrors    *prometheus.CounterVec
	reconcilePanics   *prometheus.CounterVec
	reconcileTimeouts *prometheus.CounterVec
	reconcileTime     *prometheus.HistogramVec
	maxWorkers        *prometheus.GaugeVec
	activeWorkers     *prometheus.GaugeVec

	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	queueLatency   *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec

	shard   shardCollectors
	cluster clusterCollectors
	// apiWatch are the series of optional.Metrics.
	apiWatch apiWatchCollectors
	cache    cacheCollectors
	webhook  webhookCollectors

	// perController holds each controller's series of the reconcile
	// metrics, looked up once: WithLabelValues hashes the label values on
	// every call, which the worker loop would pay for every key.
	perController   atomic.Pointer[map[string]*controllerSeries]
	perControllerMu sync.Mutex // serializes additions to perController
	// last is the series looked up last: a Recorder usually serves one
	// controller, whose name then is compared, not hashed, on every call.
	last atomic.Pointer[controllerSeries]
}

// controllerSeries are one controller's series of the reconcile metrics.
// The histogram's series is made by the first reconcile, so that it is not
// exported (with a zero count) before there is one, as the other libraries
// do.
type controllerSeries struct {
	controller                         string
	success, requeueAfter, requeue     prometheus.Counter
	errorOutcome                       prometheus.Counter
	errors, terminal, panics, timeouts prometheus.Counter
	active                             prometheus.Gauge
	time                               func() prometheus.Observer
}

// seriesOf returns the controller's series, creating them on first use.
func (r *Recorder) seriesOf(controller string) *controllerSeries {
	if cs := r.last.Load(); cs != nil && cs.controller == controller {
		return cs
	}
	if m := r.perController.Load(); m != nil {
		if cs, ok := (*m)[controller]; ok {
			r.last.Store(cs)
			return cs
		}
	}
	r.perControllerMu.Lock()
	defer r.perControllerMu.Unlock()
	next := map[string]*controllerSeries{}
	if old := r.perController.Load(); old != nil {
		if cs, ok := (*old)[controller]; ok {
			return cs
		}
		next = maps.Clone(*old)
	}
	cs := &controllerSeries{
		controller:   controller,
		success:      r.reconcileTotal.WithLabelValues(controller, string(queue.OutcomeSuccess)),
		requeueAfter: r.reconcileTotal.WithLabelValues(controller, string(queue.OutcomeRequeueAfter)),
		requeue:      r.reconcileTotal.WithLabelValues(controller, string(queue.OutcomeRequeue)),
		errorOutcome: r.reconcileTotal.WithLabelValues(controller, string(queue.OutcomeError)),
		errors:       r.reconcileErrors.WithLabelValues(controller),
		terminal:     r.terminalErrors.WithLabelValues(controller),
		panics:       r.reconcilePanics.WithLabelValues(controller),
		timeouts:     r.reconcileTimeouts.WithLabelValues(controller),
		active:       r.activeWorkers.WithLabelValues(controller),
		time:         sync.OnceValue(func() prometheus.Observer { return r.reconcileTime.WithLabelValues(controller) }),
	}
	next[controller] = cs
	r.perController.Store(&next)
	r.last.Store(cs)
	return cs
}

var _ queue.Metrics = (*Recorder)(nil)

// New creates the collectors listed in the package documentation (and, with
// WithRuntimeCollectors, the Go and process collectors), registers them on
// reg and returns a Recorder that writes to them. Nothing is
// registered on prometheus.DefaultRegisterer unless reg is that registerer.
//
// Calling New again with the same registry (or with registerers that wrap it
// without changing names or labels) is allowed: collectors that are already
// registered are reused through prometheus.AlreadyRegisteredError, so both
// Recorders write to the same series. Sharing one Recorder between
// controllers is the simpler way to get the same result.
//
// New fails, and leaves reg as it found it, when reg is nil, when a collector
// with one of these names but different labels or help text is already
// registered (for example controller-runtime's own collectors), or when reg
// rejects a collector for another reason.
func New(reg prometheus.Registerer, opts ...Option) (*Recorder, error) {
	if reg == nil {
		return nil, errors.New("metrics: registerer is nil")
	}
	var cfg config
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	r := newRecorder()
	rb := &rollbackRegisterer{reg: reg}
	var err error
	if cfg.runtime {
		registerRuntime(rb, collectors.NewGoCollector(), goMarker, &err)
		registerRuntime(rb, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), processMarker, &err)
	}
	register(rb, &r.reconcileTotal, &err)
	register(rb, &r.reconcileErrors, &err)
	register(rb, &r.terminalErrors, &err)
	register(rb, &r.reconcilePanics, &err)
	register(rb, &r.reconcileTimeouts, &err)
	register(rb, &r.reconcileTime, &err)
	register(rb, &r.maxWorkers, &err)
	register(rb, &r.activeWorkers, &err)
	register(rb, &r.depth, &err)
	register(rb, &r.adds, &err)
	register(rb, &r.queueLatency, &err)
	register(rb, &r.workDuration, &err)
	register(rb, &r.unfinished, &err)
	register(rb, &r.longestRunning, &err)
	register(rb, &r.retries, &err)
	register(rb, &r.shard.members, &err)
	register(rb, &r.shard.ownedKeys, &err)
	register(rb, &r.shard.handoffs, &err)
	register(rb, &r.shard.takeover, &err)
	register(rb, &r.cluster.ready, &err)
	register(rb, &r.cluster.failures, &err)
	register(rb, &r.cluster.reconciles, &err)
	register(rb, &r.cluster.duration, &err)
	register(rb, &r.apiWatch.state, &err)
	register(rb, &r.apiWatch.stops, &err)
	register(rb, &r.cache.objects, &err)
	register(rb, &r.cache.bytes, &err)
	register(rb, &r.webhook.latency, &err)
	register(rb, &r.webhook.requests, &err)
	register(rb, &r.webhook.inFlight, &err)
	if err != nil {
		rb.rollback()
		return nil, err
	}
	return r, nil
}

// rollbackRegisterer remembers the collectors it registered so that a failed
// New can unregister them again.
type rollbackRegisterer struct {
	reg   prometheus.Registerer
	added []prometheus.Collector
}

func (r *rollbackRegisterer) rollback() {
	for _, c := range r.added {
		r.reg.Unregister(c)
	}
}

// Metrics that every configuration of the Go and of the process collector
// serves: a registry that has one of them has a collector of that kind.
const (
	goMarker      = "go_goroutines"
	processMarker = "process_start_time_seconds"
)

// registerRuntime registers the runtime collector c on rb unless *errp is
// already set. A collector of the same kind already registered is kept,
// whether it is configured like c (AlreadyRegisteredError) or differently:
// then its metrics overlap c's without being the same, which a registry
// reports as a plain conflict, so a conflict counts as one only when
// marker, a metric of every configuration of c, is already served.
func registerRuntime(rb *rollbackRegisterer, c prometheus.Collector, marker string, errp *error) {
	if *errp != nil {
		return
	}
	err := rb.reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		rb.added = append(rb.added, c)
	case errors.As(err, &already), taken(rb.reg, marker):
		// kept
	default:
		*errp = fmt.Errorf("metrics: register collector: %w", err)
	}
}

// taken reports whether a collector registered on reg already serves the
// metric name. A Registerer cannot be asked, so taken registers a probe
// that describes only that metric, and unregisters it again at once: a
// registry refuses it when the name is taken. A second probe of a name no
// collector uses tells a registerer that refuses everything from one that
// refuses the name.
func taken(reg prometheus.Registerer, name string) bool {
	refuses := func(name string) bool {
		p := probe{prometheus.NewDesc(name, "Probe of a metric name, registered and unregistered by ctrlkit's metrics.New.", nil, nil)}
		if err := reg.Register(p); err != nil {
			return true
		}
		reg.Unregister(p)
		return false
	}
	return refuses(name) && !refuses(name+"_ctrlkit_probe")
}

// probe is a collector that describes one metric and collects nothing.
type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (probe) Collect(chan<- prometheus.Metric) {}

// register registers *c on rb unless *errp is already set. When a collector
// with the same descriptors is already registered, *c is replaced by it.
func register[C prometheus.Collector](rb *rollbackRegisterer, c *C, errp *error) {
	if *errp != nil {
		return
	}
	err := rb.reg.Register(*c)
	if err == nil {
		rb.added = append(rb.added, *c)
		return
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			*c = existing
			return
		}
		*errp = fmt.Errorf("metrics: a collector of type %T with the same metrics is already registered: %w",
			already.ExistingCollector, err)
		return
	}
	*errp = fmt.Errorf("metrics: register collector: %w", err)
}

func newRecorder() *Recorder {
	controller := []string{labelController}
	queueLabels := []string{labelName, labelController}
	return &Recorder{
		shard:    newShardCollectors(),
		cluster:  newClusterCollectors(),
		apiWatch: newAPIWatchCollectors(),
		cache:    newCacheCollectors(),
		webhook:  newWebhookCollectors(),
		reconcileTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "reconcile_total",
			Help:      "Number of finished reconciles, by controller and result (success, error, requeue_after, requeue).",
		}, []string{labelController, labelResult}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "reconcile_errors_total",
			Help:      "Number of reconciles that ended with an error, terminal errors and recovered panics included, by controller.",
		}, controller),
		terminalErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "terminal_reconcile_errors_total",
			Help:      "Number of reconciles that ended with a terminal error, which is not retried, by controller.",
		}, controller),
		reconcilePanics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "reconcile_panics_total",
			Help:      "Number of reconciles that panicked, by controller.",
		}, controller),
		reconcileTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "reconcile_timeouts_total",
			Help:      "Number of reconciles whose per-reconcile timeout expired, by controller.",
		}, controller),
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace:                       controllerRuntimeNamespace,
			Name:                            "reconcile_time_seconds",
			Help:                            "Wall time of each reconcile in seconds, by controller.",
			Buckets:                         reconcileTimeBuckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
			NativeHistogramMinResetDuration: nativeMinResetPeriod,
		}, controller),
		maxWorkers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "max_concurrent_reconciles",
			Help:      "Configured number of workers, the most reconciles that run at once, by controller.",
		}, controller),
		activeWorkers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: controllerRuntimeNamespace,
			Name:      "active_workers",
			Help:      "Number of workers running a reconcile right now, by controller.",
		}, controller),

		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem,
			Name:      "depth",
			Help:      "Number of items waiting in the workqueue, by queue name and priority.",
		}, []string{labelName, labelController, labelPriority}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workqueueSubsystem,
			Name:      "adds_total",
			Help:      "Number of adds handled by the workqueue, by queue name.",
		}, queueLabels),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem:                       workqueueSubsystem,
			Name:                            "queue_duration_seconds",
			Help:                            "Seconds an item waits in the workqueue before a worker takes it, by queue name.",
			Buckets:                         workqueueDurationBuckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
			NativeHistogramMinResetDuration: nativeMinResetPeriod,
		}, queueLabels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem:                       workqueueSubsystem,
			Name:                            "work_duration_seconds",
			Help:                            "Seconds a worker spends processing an item taken from the workqueue, by queue name.",
			Buckets:                         workqueueDurationBuckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
			NativeHistogramMinResetDuration: nativeMinResetPeriod,
		}, queueLabels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem,
			Name:      "unfinished_work_seconds",
			Help: "Seconds of work in progress that work_duration has not observed yet, by queue name. " +
				"Large values point to stuck workers; the rate at which it grows approximates the number of stuck workers.",
		}, queueLabels),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: workqueueSubsystem,
			Name:      "longest_running_processor_seconds",
			Help:      "Seconds the longest-running worker of the workqueue has been processing its item, by queue name.",
		}, queueLabels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: workqueueSubsystem,
			Name:      "retries_total",
			Help:      "Number of items added to the workqueue with a delay (rate-limited retries and delayed adds), by queue name.",
		}, queueLabels),
	}
}

// ObserveReconcile records one finished reconcile of controller: it counts it
// under its outcome in controller_runtime_reconcile_total, counts errors
// (Outcome OutcomeError), terminal errors, panics and timeouts in their own
// counters, and observes its duration in
// controller_runtime_reconcile_time_seconds.
func (r *Recorder) ObserveReconcile(controller string, o queue.Observation) {
	cs := r.seriesOf(controller)
	switch o.Outcome {
	case queue.OutcomeSuccess:
		cs.success.Inc()
	case queue.OutcomeRequeueAfter:
		cs.requeueAfter.Inc()
	case queue.OutcomeRequeue:
		cs.requeue.Inc()
	case queue.OutcomeError:
		cs.errorOutcome.Inc()
	default:
		r.reconcileTotal.WithLabelValues(controller, string(o.Outcome)).Inc()
	}
	if o.Outcome == queue.OutcomeError {
		cs.errors.Inc()
	}
	if o.Terminal {
		cs.terminal.Inc()
	}
	if o.Panicked {
		cs.panics.Inc()
	}
	if o.TimedOut {
		cs.timeouts.Inc()
	}
	cs.time().Observe(o.Duration.Seconds())
}

// AddActiveWorkers adds delta to controller_runtime_active_workers of
// controller.
func (r *Recorder) AddActiveWorkers(controller string, delta int) {
	r.seriesOf(controller).active.Add(float64(delta))
}

// SetMaxWorkers sets controller_runtime_max_concurrent_reconciles of
// controller to n. The worker loop calls it once before its workers start,
// so it also creates every other reconcile series of controller with value
// zero (active workers, each result of reconcile_total, errors, terminal
// errors, panics, timeouts): rate() and increase() then see the first
// reconcile, and alerts need no absent() guard. Existing values are kept.
func (r *Recorder) SetMaxWorkers(controller string, n int) {
	r.maxWorkers.WithLabelValues(controller).Set(float64(n))
	r.activeWorkers.WithLabelValues(controller).Add(0)
	for _, outcome := range []queue.Outcome{queue.OutcomeSuccess, queue.OutcomeError, queue.OutcomeRequeueAfter} {
		r.reconcileTotal.WithLabelValues(controller, string(outcome)).Add(0)
	}
	r.reconcileErrors.WithLabelValues(controller).Add(0)
	r.terminalErrors.WithLabelValues(controller).Add(0)
	r.reconcilePanics.WithLabelValues(controller).Add(0)
	r.reconcileTimeouts.WithLabelValues(controller).Add(0)
}

// NewDepthMetric returns workqueue_depth for the queue called name.
func (r *Recorder) NewDepthMetric(name string) workqueue.GaugeMetric {
	return r.depth.WithLabelValues(name, name, "")
}

// NewAddsMetric returns workqueue_adds_total for the queue called name.
func (r *Recorder) NewAddsMetric(name string) workqueue.CounterMetric {
	return r.adds.WithLabelValues(name, name)
}

// NewLatencyMetric returns workqueue_queue_duration_seconds for the queue
// called name.
func (r *Recorder) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return r.queueLatency.WithLabelValues(name, name)
}

// NewWorkDurationMetric returns workqueue_work_duration_seconds for the queue
// called name.
func (r *Recorder) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return r.workDuration.WithLabelValues(name, name)
}

// NewUnfinishedWorkSecondsMetric returns workqueue_unfinished_work_seconds
// for the queue called name.
func (r *Recorder) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return r.unfinished.WithLabelValues(name, name)
}

// NewLongestRunningProcessorSecondsMetric returns
// workqueue_longest_running_processor_seconds for the queue called name.
func (r *Recorder) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return r.longestRunning.WithLabelValues(name, name)
}

// NewRetriesMetric returns workqueue_retries_total for the queue called name.
func (r *Recorder) NewRetriesMetric(name string) workqueue.CounterMetric {
	return r.retries.WithLabelValues(name, name)
}
