// Package queue runs a reconcile.Reconciler over a rate-limited client-go
// workqueue: the worker loop every controller needs, done once.
//
// A Controller owns one typed workqueue. Informer event handlers feed it with
// Add (never rate limited); failed reconciles come back through the rate
// limiter; Sources such as Periodic and Channel feed it from outside. Run waits
// for the caches it was given, starts the workers, and on cancellation stops
// taking keys, lets in-flight reconciles finish, and returns only when every
// goroutine it started is gone.
//
// The queue is client-go's rate-limiting and delaying workqueue over a base
// queue that keeps client-go's guarantees (a key is never handed to two
// workers at once, and keys added while a reconcile runs coalesce into
// exactly one more run) and adds a low-priority lane for events that carry no
// change (see AddLowPriority).
//
// Example:
//
//	ctrl, err := queue.New[cache.ObjectName]("foo", reconciler, queue.Options{
//		Workers:     2,
//		WaitForSync: []cache.InformerSynced{registration.HasSynced},
//	})
//	if err != nil {
//		return err
//	}
//	fooInformer.AddEventHandler(informer.EnqueueHandler[*v1alpha1.Foo](ctrl.Add))
//	return ctrl.Run(ctx) // blocks until ctx is cancelled and shutdown is complete
package queue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Defaults applied by New when the corresponding Options field is zero.
const (
	// DefaultWorkers is the number of concurrent reconciles.
	DefaultWorkers = 1
	// DefaultShutdownTimeout bounds how long Run waits for in-flight
	// reconciles after its context is cancelled.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultBaseDelay is the first retry delay of a failing key; it doubles
	// on every further failure of that key.
	DefaultBaseDelay = 5 * time.Millisecond
	// DefaultMaxDelay caps the per-key retry delay.
	DefaultMaxDelay = 1000 * time.Second
	// DefaultRetryQPS and DefaultRetryBurst size the token bucket shared by
	// all retries of one controller.
	DefaultRetryQPS   = 10
	DefaultRetryBurst = 100
)

// ErrShutdownTimeout is returned (wrapped) by Run when in-flight reconciles
// did not return within the shutdown timeout even after their contexts were
// cancelled.
var ErrShutdownTimeout = errors.New("reconciles still running after the shutdown timeout")

// DefaultRateLimiter returns the rate limiter used when Options.RateLimiter is
// nil: per-key exponential backoff from DefaultBaseDelay to DefaultMaxDelay,
// combined (the larger delay wins) with a token bucket of DefaultRetryQPS and
// DefaultRetryBurst shared by all keys. The rate limiter is consulted only for
// retries (failed reconciles); informer events added with Add are never
// delayed by it.
func DefaultRateLimiter[K comparable]() workqueue.TypedRateLimiter[K] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[K](DefaultBaseDelay, DefaultMaxDelay),
		&workqueue.TypedBucketRateLimiter[K]{Limiter: rate.NewLimiter(rate.Limit(DefaultRetryQPS), DefaultRetryBurst)},
	)
}

// Options configures a Controller. The zero value of every field selects the
// documented default.
type Options[K comparable] struct {
	// Workers is the number of keys reconciled concurrently. Default 1.
	Workers int
	// RateLimiter decides retry delays. Default DefaultRateLimiter.
	RateLimiter workqueue.TypedRateLimiter[K]
	// ReconcileTimeout, when positive, bounds each Reconcile call through its
	// context. A reconcile whose context expired is counted as timed out and
	// retried like an error.
	ReconcileTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for in-flight reconciles after
	// its context is cancelled; then their contexts are cancelled too.
	// Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// WaitForSync lists functions (informer HasSynced, or better the
	// HasSynced of each event handler registration) that must all report
	// true before any worker starts.
	WaitForSync []cache.InformerSynced
	// Sources feed keys into the queue from outside the informers. They are
	// started by Run and stopped before Run returns.
	Sources []Source[K]
	// Metrics receives measurements; its workqueue provider is given to this
	// controller's queue only. Default NoopMetrics.
	Metrics Metrics
}

// Controller runs a Reconciler over a workqueue of keys of type K. Create it
// with New; a Controller runs once.
type Controller[K comparable] struct {
	name       string
	reconciler reconcile.Reconciler[K]
	opts       Options[K]
	queue      workqueue.TypedRateLimitingInterface[K]
	base       *keyQueue[K]
	metrics    Metrics

	nextID  atomic.Uint64
	started atomic.Bool
	syncMu  sync.Mutex // guards opts.WaitForSync against Run

	// Set by Run: the logger carrying the controller name, and logr's
	// context key (nil if unknown) for reconcile contexts.
	logger    logr.Logger
	loggerKey any
	// timed is false when metrics are discarded, to skip reading the clock.
	timed bool
}

// New returns a Controller named name (used for the queue, metrics and
// logs) that hands keys to r. Options are validated here so that mistakes
// surface before Run. Keys may be added before Run starts; they wait until
// the workers start. A Controller that is never run must be released with
// ShutDown.
func New[K comparable](name string, r reconcile.Reconciler[K], opts Options[K]) (*Controller[K], error) {
	if name == "" {
		return nil, errors.New("queue: controller name must not be empty")
	}
	if r == nil {
		return nil, errors.New("queue: reconciler must not be nil")
	}
	if opts.Workers < 0 || opts.ReconcileTimeout < 0 || opts.ShutdownTimeout < 0 {
		return nil, fmt.Errorf("queue: negative option for %q: workers=%d reconcileTimeout=%s shutdownTimeout=%s",
			name, opts.Workers, opts.ReconcileTimeout, opts.ShutdownTimeout)
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultRateLimiter[K]()
	}
	if opts.Metrics == nil {
		opts.Metrics = NoopMetrics{}
	}
	for i, fn := range opts.WaitForSync {
		if fn == nil {
			return nil, fmt.Errorf("queue: sync function %d of %q is nil", i, name)
		}
	}
	for i, s := range opts.Sources {
		if s == nil {
			return nil, fmt.Errorf("queue: source %d of %q is nil", i, name)
		}
		if v, ok := s.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return nil, fmt.Errorf("queue: source %d of %q: %w", i, name, err)
			}
		}
	}
	_, noop := opts.Metrics.(NoopMetrics)
	base, q := newWorkqueue(name, opts.RateLimiter, opts.Metrics, nil)
	return &Controller[K]{name: name, reconciler: r, opts: opts, queue: q, base: base, metrics: opts.Metrics, timed: !noop}, nil
}

// newWorkqueue builds a controller's queue: client-go's rate-limiting and
// delaying queues over a keyQueue. clk is nil outside tests.
func newWorkqueue[K comparable](name string, rl workqueue.TypedRateLimiter[K], provider Metrics, clk clock.WithTicker) (*keyQueue[K], workqueue.TypedRateLimitingInterface[K]) {
	base := newKeyQueue[K](name, provider, clk)
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[K]{
		Name:            name,
		MetricsProvider: provider,
		Clock:           clk,
		Queue:           base,
	})
	return base, workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[K]{
		Name:            name,
		MetricsProvider: provider,
		DelayingQueue:   delaying,
	})
}

// WaitForSync adds functions that must all report true before any worker
// starts, like Options.WaitForSync. It exists because an event handler is
// usually registered with the Controller's Add, and only then yields the
// registration's HasSynced. It must be called before Run; afterwards it
// returns an error and changes nothing.
func (c *Controller[K]) WaitForSync(synced ...cache.InformerSynced) error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.started.Load() {
		return fmt.Errorf("queue: controller %q: WaitForSync called after Run", c.name)
	}
	for i, fn := range synced {
		if fn == nil {
			return fmt.Errorf("queue: controller %q: sync function %d is nil", c.name, i)
		}
	}
	c.opts.WaitForSync = append(c.opts.WaitForSync, synced...)
	return nil
}

// ShutDown releases the queue of a Controller that will never be run: New
// starts the queue's bookkeeping goroutines, and Run stops them when it
// returns. Keys added after ShutDown are ignored. Calling it more than once,
// or after Run, is harmless.
func (c *Controller[K]) ShutDown() { c.queue.ShutDown() }

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// Add enqueues key for reconciliation now, without rate limiting. A key that
// is already waiting is not added twice (if it waits in the low-priority
// lane, it moves ahead); a key that is being reconciled runs once more
// afterwards. Add is what informer event handlers call for changes.
func (c *Controller[K]) Add(key K) { c.base.Add(key) }

// AddLowPriority enqueues key like Add, but in a second lane behind the keys
// added with Add (and behind retries and delayed adds): for events that carry
// no change, such as an informer's initial list (isInInitialList) and
// resyncs (an unchanged resourceVersion). During a large initial sync or
// resync, fresh changes are then reconciled first. While both lanes hold
// keys, one low-priority key is served for every eight fresh ones, so a
// steady stream of fresh events cannot starve the low lane. Keys within each
// lane keep their order.
//
// Priority only goes up until the key is handed to a worker: if the key was
// also added with Add since then (before or after this call, also while it
// is being reconciled), it waits in the fresh lane. All other queue
// guarantees are those of Add.
func (c *Controller[K]) AddLowPriority(key K) { c.base.AddLow(key) }

// AddAfter enqueues key once d has passed (at once if d <= 0).
func (c *Controller[K]) AddAfter(key K, d time.Duration) { c.queue.AddAfter(key, d) }

// Len returns the number of keys waiting to be reconciled (not counting keys
// whose delay has not passed yet).
func (c *Controller[K]) Len() int { return c.queue.Len() }

// Run starts the sources, waits for every WaitForSync function, starts the
// workers and blocks until ctx is cancelled. Then it stops handing out keys,
// waits up to ShutdownTimeout for in-flight reconciles, cancels their contexts
// if they are still running, shuts the queue down and returns once every
// goroutine it started has returned. Keys still queued are dropped: informers
// deliver them again on the next start.
//
// Run returns nil after a normal shutdown, an error if ctx was cancelled
// before the caches synced, an error wrapping ErrShutdownTimeout if
// reconciles ignored their cancelled context for a further ShutdownTimeout,
// and an error if called a second time.
func (c *Controller[K]) Run(ctx context.Context) error {
	c.syncMu.Lock()
	if !c.started.CompareAndSwap(false, true) {
		c.syncMu.Unlock()
		return fmt.Errorf("queue: controller %q was already started", c.name)
	}
	waitFor := c.opts.WaitForSync
	c.syncMu.Unlock()
	logger := klog.FromContext(ctx).WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)
	c.logger = logger
	c.loggerKey = loggerContextKey()

	// Reconciles get a context that survives ctx's cancellation so that they
	// can finish during the shutdown grace period.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	var sources sync.WaitGroup
	for _, s := range c.opts.Sources {
		sources.Go(func() { s.Start(ctx, c) })
	}
	defer sources.Wait()
	// Shutting the queue down also stops its delaying goroutine.
	defer c.queue.ShutDown()
	stopMetrics := make(chan struct{})
	var metricsLoop sync.WaitGroup
	metricsLoop.Go(func() { c.base.runMetrics(stopMetrics) })
	defer metricsLoop.Wait()
	defer close(stopMetrics)

	logger.Info("Waiting for caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), waitFor...) {
		return fmt.Errorf("queue: controller %q stopped before its caches synced: %w", c.name, context.Cause(ctx))
	}

	c.metrics.SetMaxWorkers(c.name, c.opts.Workers)
	logger.Info("Starting workers", "count", c.opts.Workers)
	var workers sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(ctx, workCtx) {
			}
		})
	}
	workersDone := make(chan struct{})
	go func() {
		workers.Wait()
		close(workersDone)
	}()

	<-ctx.Done()
	logger.Info("Shutting down workers")
	// Wake idle workers; busy ones see ctx is done after their reconcile.
	c.queue.ShutDown()

	timer := time.NewTimer(c.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-workersDone:
		logger.Info("All workers finished")
		return nil
	case <-timer.C:
	}
	logger.Info("Shutdown timeout reached, cancelling in-flight reconciles", "timeout", c.opts.ShutdownTimeout)
	cancelWork()
	timer.Reset(c.opts.ShutdownTimeout)
	select {
	case <-workersDone:
		return nil
	case <-timer.C:
		err := fmt.Errorf("queue: controller %q: %w (%s, then %s after cancelling them)",
			c.name, ErrShutdownTimeout, c.opts.ShutdownTimeout, c.opts.ShutdownTimeout)
		logger.Error(err, "Returning with reconciles that ignore their context")
		return err
	}
}

// processNext takes one key, reconciles it and reports whether the worker
// should go on.
func (c *Controller[K]) processNext(ctx, workCtx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		// Stopping: leave the key; it is not worked on by this process again.
		return false
	}
	c.reconcileKey(workCtx, key)
	return true
}

// reconcileKey runs one reconcile and applies its outcome to the queue.
func (c *Controller[K]) reconcileKey(workCtx context.Context, key K) {
	// A logger that discards everything needs no per-key values: skip the
	// per-reconcile context and its allocation.
	var rc *reconcileContext[K]
	ctx := workCtx
	if c.logger.GetSink() != nil {
		rc = &reconcileContext[K]{Context: workCtx, ctrl: c, key: key, id: c.nextID.Add(1)}
		ctx = rc
		if c.loggerKey == nil {
			ctx = klog.NewContext(workCtx, rc.getLogger())
		}
	}
	if c.opts.ReconcileTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.ReconcileTimeout, errReconcileTimeout)
		defer cancel()
	}

	c.metrics.AddActiveWorkers(c.name, 1)
	var start time.Time
	if c.timed {
		start = time.Now()
	}
	res, panicked, err := c.safeReconcile(ctx, rc, key)
	obs := Observation{Panicked: panicked}
	if c.timed {
		obs.Duration = time.Since(start)
	}
	c.metrics.AddActiveWorkers(c.name, -1)
	if err != nil && workCtx.Err() != nil {
		// The shutdown cancelled the reconcile: it did not fail, and the
		// queue is shutting down, so there is nothing to retry or count.
		c.keyLogger(rc).V(2).Info("Reconcile cancelled by the shutdown", "err", err.Error())
		return
	}
	// Like controller-runtime, a reconcile counts as timed out when its own
	// deadline fired, whatever it returned.
	obs.TimedOut = c.opts.ReconcileTimeout > 0 && errors.Is(context.Cause(ctx), errReconcileTimeout)

	switch {
	case err == nil && res.RequeueAfter > 0:
		obs.Outcome = OutcomeRequeueAfter
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.RequeueAfter)
	case err == nil:
		obs.Outcome = OutcomeSuccess
		c.queue.Forget(key)
	case reconcile.IsTerminal(err):
		obs.Outcome = OutcomeError
		obs.Terminal = true
		c.queue.Forget(key)
		c.keyLogger(rc).Error(err, "Reconcile failed with a terminal error; not retrying")
	default:
		obs.Outcome = OutcomeError
		c.queue.AddRateLimited(key)
		if isConflict(err) {
			// A 409 (a stale resourceVersion, or a create of an object the
			// cache did not show yet) is routine; the retry sees fresh state.
			c.keyLogger(rc).V(4).Info("Reconcile hit a conflict, retrying", "err", err.Error())
		} else {
			c.keyLogger(rc).Error(err, "Reconcile failed, retrying with backoff", "retries", c.queue.NumRequeues(key))
		}
	}
	c.metrics.ObserveReconcile(c.name, obs)
}

// keyLogger returns the logger of one reconcile: with the key and reconcile
// ID when rc exists, else the controller's (discarding) logger.
func (c *Controller[K]) keyLogger(rc *reconcileContext[K]) logr.Logger {
	if rc == nil {
		return c.logger
	}
	return rc.getLogger()
}

// safeReconcile calls the reconciler and turns a panic into an error so that
// one bad key cannot take the process down.
func (c *Controller[K]) safeReconcile(ctx context.Context, rc *reconcileContext[K], key K) (res reconcile.Result, panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.keyLogger(rc).Error(nil, "Observed a panic in Reconcile", "panic", r, "stacktrace", string(buf))
			res, panicked, err = reconcile.Result{}, true, fmt.Errorf("panic in Reconcile: %v", r)
		}
	}()
	res, err = c.reconciler.Reconcile(ctx, key)
	return res, false, err
}

// errReconcileTimeout is the cause of a reconcile context whose
// ReconcileTimeout expired.
var errReconcileTimeout = errors.New("reconcile timeout")

// isConflict reports whether err is an HTTP 409 from the API server (a
// resourceVersion conflict or an AlreadyExists), through any wrapping. A
// joined error is a conflict only when every error it joins is one, so that
// a real failure joined to a conflict is never logged quietly.
func isConflict(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case apierrors.APIStatus:
		return e.Status().Code == http.StatusConflict
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if inner != nil && !isConflict(inner) {
				return false
			}
		}
		return slices.ContainsFunc(errs, func(e error) bool { return e != nil })
	case interface{ Unwrap() error }:
		return isConflict(e.Unwrap())
	}
	return false
}
