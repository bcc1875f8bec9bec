// Package queue runs a reconcile.Reconciler over a rate-limited client-go
// workqueue: the worker loop every controller needs, done once.
//
// A Controller owns one queue of keys. What feeds it is given to Watch:
// typed informer event handlers bound to their informers with On (changes
// with Add, initial-list and resync events with AddLowPriority; neither is
// rate limited), keys from outside the informers (Periodic, Channel,
// Feed), and gates of keys whose informers come and go while the
// controller runs (Gated; package informer/optional builds them for APIs
// that are installed and removed). Failed reconciles come back through the rate limiter. Run registers the handlers, waits until they have seen
// their informers' initial lists, starts the workers, and on cancellation
// stops taking keys, lets in-flight reconciles finish, removes the handlers
// and returns only when every goroutine it started is gone. New starts
// nothing, so a Controller that is never run needs no cleanup.
//
// The queue is client-go's rate-limiting workqueue over a delaying layer and
// a base queue that keep client-go's guarantees (a key is never handed to
// two workers at once, and keys added while a reconcile runs coalesce into
// exactly one more run). The base queue adds a low-priority lane for events
// that carry no change (see AddLowPriority); the delaying layer's goroutine
// is waited for when Run returns, and it tells retries after failures
// (Retrying) from delays asked for (AddAfter, Result.RequeueAfter). A retry
// that a later successful reconcile of the key made needless is dropped.
//
// A controller of ConfigMaps, wired onto a shared informer factory:
//
//	ctrl, err := queue.New("configmaps", reconciler, queue.WithWorkers(2))
//	if err != nil {
//		return err
//	}
//	if err := ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))); err != nil {
//		return err
//	}
//	factory.Start(ctx.Done())
//	return ctrl.Run(ctx) // blocks until ctx is cancelled and shutdown is complete
package queue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// ErrShutdownTimeout is returned (wrapped) by Run when in-flight reconciles
// did not return within the shutdown timeout even after their contexts were
// cancelled.
var ErrShutdownTimeout = errors.New("reconciles still running after the shutdown timeout")

// ErrAborted is returned (wrapped, together with the cause given to Abort)
// by Run after Abort.
var ErrAborted = errors.New("aborted")

// Controller runs a Reconciler over a queue of keys of type K. Create it
// with New; a Controller runs once.
type Controller[K comparable] struct {
	name        string
	reconciler  reconcile.Reconciler[K]
	cfg         config
	rateLimiter workqueue.TypedRateLimiter[K]
	ownership   atomic.Pointer[Ownership[K]] // nil: every key is this process's
	gates       atomic.Pointer[[]Gate[K]]    // the gates given to Watch (Gated), copied on write
	base        *keyQueue[K]
	metrics     Metrics

	// queue is the rate-limiting queue over delays over base, built by Run.
	queue  workqueue.TypedRateLimitingInterface[K]
	delays *delayQueue[K]
	// running holds delays once Run has built it, for AddAfter and
	// Retrying.
	running atomic.Pointer[delayQueue[K]]
	// clock is the clock of WithClock, which the delaying layer and the
	// Periodic sources wait by; nil for the real one.
	clock clock.Clock

	mu        sync.Mutex
	started   bool
	watches   []*registration             // informer handlers, registered by Run
	feeds     []func(ctx context.Context) // sources of keys, run by Run
	periodics []periodicSource            // the Periodic ones among them
	delayed   map[K]time.Time             // AddAfter before Run: when each key is due
	aborted   chan struct{}
	abortErr  error

	active atomic.Int64
	nextID atomic.Uint64
	// working is true while Run's workers run: its handlers and gates
	// have synced.
	working atomic.Bool

	// terminal holds, for each key whose last reconcile ended with a
	// terminal error, that error's text and generation: the same error
	// again is logged quietly. A key leaves it when a reconcile of it ends
	// otherwise.
	terminalMu sync.Mutex
	terminal   map[K]terminalNote

	// triggers holds, while tracing is on, the triggers recorded for each
	// key since its last reconcile started (see Trigger).
	triggerMu sync.Mutex
	triggers  map[K]*pendingTriggers // guarded by triggerMu

	// Set by Run: the logger carrying the controller name, and logr's
	// context key (nil if unknown) for reconcile contexts.
	logger    logr.Logger
	loggerKey any
}

// Watch is something that feeds a controller, given to Controller.Watch: a
// typed event handler bound to the informer of its type (On), or a source of
// keys from outside informers (Periodic, Channel, Feed). The zero Watch is
// refused by Controller.Watch.
type Watch struct {
	// An informer's handler: informer, and add, which registers the
	// handler on it.
	informer cache.SharedIndexInformer
	add      func(logger klog.Logger) (cache.ResourceEventHandlerRegistration, error)
	// A source of keys from outside informers (see Feed): start runs
	// while the controller runs; periodic is set for a Periodic source.
	start    func(ctx context.Context)
	periodic periodicSource
	// gate is a Gate[K] of the controller's key type K (see Gated).
	gate any
	// err is why the Watch cannot work.
	err error
}

// On binds h to inf for Controller.Watch. Both are typed by the object type
// T, so a handler for one type cannot be bound to an informer of another:
// the mismatch does not compile. Typed informers come from the TypedInformer
// methods of client-go's (and code-generator's) informer factories:
//
//	err := ctrl.Watch(queue.On(deployments.TypedInformer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl)))
func On[T cache.Object](inf cache.TypedSharedIndexInformer[T], h cache.TypedResourceEventHandler[T]) Watch {
	if inf == nil || h == nil {
		return Watch{}
	}
	return Watch{informer: inf, add: func(logger klog.Logger) (cache.ResourceEventHandlerRegistration, error) {
		return inf.AddTypedEventHandler(h, cache.HandlerOptions{Logger: &logger})
	}}
}

// registration is a Watch of one controller, and its registration while the
// controller runs.
type registration struct {
	Watch
	reg atomic.Pointer[cache.ResourceEventHandlerRegistration]
}

// New returns a Controller named name (used for the queue, metrics and
// logs) that hands keys to r. Options are checked here, so that mistakes
// surface before Run. New starts no goroutine and registers nothing: a
// Controller that is never run needs no cleanup. Keys may be added before
// Run; they wait until the workers start.
func New[K comparable](name string, r reconcile.Reconciler[K], opts ...Option) (*Controller[K], error) {
	if name == "" {
		return nil, errors.New("queue: controller name must not be empty")
	}
	if r == nil {
		return nil, fmt.Errorf("queue: controller %q: reconciler must not be nil", name)
	}
	cfg, rl, err := options[K](opts)
	if err != nil {
		return nil, fmt.Errorf("queue: controller %q: %w", name, err)
	}
	return &Controller[K]{
		name:        name,
		reconciler:  r,
		cfg:         cfg,
		rateLimiter: rl,
		base:        newKeyQueue(name, cfg.metrics, nil, groupFunc[K](cfg.fairness)),
		metrics:     cfg.metrics,
		delayed:     map[K]time.Time{},
		aborted:     make(chan struct{}),
		clock:       cfg.clock,
	}, nil
}

// groupFunc returns the group function of WithFairness, nil without one.
func groupFunc[K comparable](fairness any) func(K) string {
	group, _ := fairness.(func(K) string)
	return group
}

// newWorkqueue builds a controller's queue: client-go's rate-limiting queue
// over the delaying layer over base. It starts the delaying layer's
// goroutine, which ShutDown of the returned queue stops and waits for. clk
// is nil outside tests.
func newWorkqueue[K comparable](base *keyQueue[K], name string, rl workqueue.TypedRateLimiter[K], provider Metrics, clk clock.Clock) (workqueue.TypedRateLimitingInterface[K], *delayQueue[K]) {
	delays := newDelayQueue[K](base, name, provider, clk)
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[K]{
		Name:            name,
		MetricsProvider: provider,
		DelayingQueue:   delays,
	}), delays
}

// Watch registers the handlers of ws (see On) for this controller. The
// registrations are made when Run starts and removed when Run returns, so
// that a controller that never runs, or that failed to be wired, leaves
// nothing behind on a shared informer. Run starts the workers only once
// every registration has delivered its informer's initial list. Handlers
// usually enqueue into the controller itself:
//
//	err := ctrl.Watch(
//		queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl)),
//		queue.On(deployments.TypedInformer(), owner.EnqueueOwner[*appsv1.Deployment](fooKind, ctrl)),
//	)
//
// Watch must be called before Run; it registers nothing if any Watch is
// the zero Watch (made by On from a nil informer or handler).
func (c *Controller[K]) Watch(ws ...Watch) error {
	for i, w := range ws {
		switch {
		case w.err != nil:
			return fmt.Errorf("queue: controller %q: Watch %d: %w", c.name, i, w.err)
		case w.gate != nil:
			if err := c.checkGate(w); err != nil {
				return fmt.Errorf("queue: controller %q: Watch %d: %w", c.name, i, err)
			}
		case w.add == nil && w.start == nil:
			return fmt.Errorf("queue: controller %q: Watch %d has no informer or no handler", c.name, i)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("queue: controller %q: Watch called after Run", c.name)
	}
	for _, w := range ws {
		if w.gate != nil {
			c.lockedAddGate(w)
		} else if w.start != nil {
			c.feeds = append(c.feeds, w.start)
			if w.periodic != nil {
				c.periodics = append(c.periodics, w.periodic)
			}
		} else {
			c.watches = append(c.watches, &registration{Watch: w})
		}
	}
	return nil
}

// now reads the clock the controller waits by.
func (c *Controller[K]) now() time.Time { return c.waitClock().Now() }

// waitClock is the clock of WithClock, or the real one.
func (c *Controller[K]) waitClock() clock.Clock {
	if c.clock == nil {
		return clock.RealClock{}
	}
	return c.clock
}

// NextDue returns the earliest time, on the clock of WithClock, at which
// the controller will add keys by itself: the due time of a key waiting
// for its delay or its retry, or the next tick of a running Periodic
// source; ok is false when nothing waits. A time not after the clock's
// current time means something is due and about to be added. With a fake
// clock, a test moves the clock to each due time in turn to run what
// waits (see queuetest.Advance).
func (c *Controller[K]) NextDue() (due time.Time, ok bool) {
	c.mu.Lock()
	pending := maps.Clone(c.delayed)
	periodics := c.periodics
	c.mu.Unlock()
	earlier := func(t time.Time) {
		if !ok || t.Before(due) {
			due, ok = t, true
		}
	}
	for _, at := range pending {
		earlier(at)
	}
	if q := c.running.Load(); q != nil {
		if t, waits := q.nextDue(); waits {
			earlier(t)
		}
	}
	for _, p := range periodics {
		if t, waits := p.nextDue(); waits {
			earlier(t)
		}
	}
	return due, ok
}

// HasSynced reports whether the controller has what it needs to work: while
// it runs, whether every handler registered by Watch has delivered its
// informer's initial list (the workers wait for this); before Run, whether
// every watched informer has synced its cache, so that a standby replica
// with warm informers reports ready. Every Gate given to Watch must report
// synced too (see Gate.HasSynced). It is the readiness signal of a
// controller.
func (c *Controller[K]) HasSynced() bool {
	c.mu.Lock()
	watches := c.watches
	c.mu.Unlock()
	for _, g := range c.loadGates() {
		if !g.HasSynced() {
			return false
		}
	}
	for _, w := range watches {
		if reg := w.reg.Load(); reg != nil {
			if !(*reg).HasSynced() {
				return false
			}
		} else if !w.informer.HasSynced() {
			return false
		}
	}
	return true
}

// Running reports whether Run is under way: it has registered its
// handlers, they and the gates have synced, and its workers have started,
// so that every object in the informers' caches then has had its keys
// added. It is false before and once Run returns. Unlike HasSynced, which
// before Run reports on the informers alone, it tells a test that started
// Run in the background when the controller works (see queuetest.Start).
func (c *Controller[K]) Running() bool { return c.working.Load() }

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// Add enqueues key for reconciliation now, without rate limiting. A key that
// is already waiting is not added twice (if it waits in the low-priority
// lane, it moves ahead); a key that is being reconciled runs once more
// afterwards. Add is what informer event handlers call for changes. Keys
// added after Run returned, and keys this process does not own (see
// Restrict), are ignored.
func (c *Controller[K]) Add(key K) {
	if c.owns(key) {
		c.base.Add(key)
		return
	}
	c.ForgetTriggers(key) // recorded while the key was still owned
}

// owns reports whether key is this process's to reconcile: its
// Ownership and every Gate own it.
func (c *Controller[K]) owns(key K) bool {
	if o := c.owner(); o != nil && !o.Owns(key) {
		return false
	}
	for _, g := range c.loadGates() {
		if !g.Owns(key) {
			return false
		}
	}
	return true
}

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
func (c *Controller[K]) AddLowPriority(key K) {
	if c.owns(key) {
		c.base.AddLow(key)
		return
	}
	c.ForgetTriggers(key)
}

// AddAfter enqueues key once d has passed (at once if d <= 0), like Add.
// Keys added before Run wait for their time to come once Run has started.
func (c *Controller[K]) AddAfter(key K, d time.Duration) {
	if !c.owns(key) {
		return
	}
	if q := c.running.Load(); q != nil {
		q.AddAfter(key, d) // its trigger is recorded when the key is due
		return
	}
	if d <= 0 {
		c.traceDue(key, false)
		c.base.Add(key)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.running.Load(); q != nil {
		q.AddAfter(key, d)
		return
	}
	at := c.now().Add(d)
	if old, ok := c.delayed[key]; !ok || at.Before(old) {
		c.delayed[key] = at
	}
}

// Len returns the number of keys waiting to be reconciled (not counting keys
// whose delay or retry is not due yet, nor keys being reconciled).
func (c *Controller[K]) Len() int { return c.base.Len() }

// Retrying returns the number of keys that wait for a retry after a failed
// reconcile: their backoff (see WithRateLimiter) has not passed yet. Once
// due, a key counts in Len. Keys delayed by AddAfter or Result.RequeueAfter
// are not counted. A key's pending retry is dropped, and no longer
// counted, when a later reconcile of the key (started by an Add meanwhile)
// ends without an error to retry: its backoff is then forgotten. Retrying
// is zero before Run and after Run returned.
func (c *Controller[K]) Retrying() int {
	if d := c.running.Load(); d != nil {
		return d.Retrying()
	}
	return 0
}

// Active returns the number of reconciles running now.
func (c *Controller[K]) Active() int { return int(c.active.Load()) }

// Abort stops the controller at once: Run stops handing out keys, cancels
// the contexts of in-flight reconciles with cause (wrapped in ErrAborted)
// without waiting for them to finish on their own, and returns once they
// have returned (or after the shutdown timeout, with ErrShutdownTimeout).
// It is for losing the right to write, such as a lost leader election
// Lease; a normal stop cancels Run's context instead. Abort may be called at
// any time, also during a normal stop, and more than once; the first cause
// counts. Called before Run, it makes Run return at once.
func (c *Controller[K]) Abort(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.aborted:
		return
	default:
	}
	c.abortErr = fmt.Errorf("queue: controller %q %w: %w", c.name, ErrAborted, cause)
	close(c.aborted)
}

// Run registers the handlers given to Watch, starts its other Watches and
// the Ownership given to Restrict, waits
// until every handler has delivered its informer's initial list, starts the
// workers and blocks until ctx is cancelled (or Abort is called). Then it
// stops handing out keys, waits up to the shutdown timeout for in-flight
// reconciles, cancels their contexts if they are still running and waits as
// long again, shuts the queue down, removes its handlers and returns once
// every goroutine it started has returned. Keys still queued are dropped:
// informers deliver them again on the next start.
//
// Run returns nil after a normal shutdown; an error if a handler could not
// be registered, if ctx was cancelled before the handlers synced, or if
// called a second time; an error wrapping ErrShutdownTimeout if reconciles
// ignored their cancelled context; an error wrapping ErrAborted after Abort.
func (c *Controller[K]) Run(ctx context.Context) (err error) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("queue: controller %q was already started", c.name)
	}
	c.started = true
	select {
	case <-c.aborted:
		c.base.ShutDown()
		c.mu.Unlock()
		return c.abortErr
	default:
	}
	q, delays := newWorkqueue(c.base, c.name, c.rateLimiter, c.metrics, c.clock)
	if c.cfg.tracer != nil {
		// A delay's or a retry's trigger belongs to the reconcile it sets
		// off: it is recorded when the key is due, not when it was asked.
		delays.onDue(c.traceDue)
	}
	c.queue, c.delays = q, delays
	c.running.Store(delays)
	now := c.now()
	for key, at := range c.delayed {
		q.AddAfter(key, at.Sub(now))
	}
	c.delayed = nil
	watches, feeds := c.watches, c.feeds
	for _, p := range c.periodics {
		p.useClock(c.waitClock())
	}
	c.mu.Unlock()
	// Shutting the queue down also stops its delaying goroutine and waits
	// for it.
	defer q.ShutDown()

	logger := klog.FromContext(ctx).WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)
	c.logger = logger
	c.loggerKey = loggerContextKey()

	if err := c.register(logger, watches); err != nil {
		return err
	}
	defer c.unregister(logger, watches)

	// Reconciles get a context that survives ctx's cancellation so that they
	// can finish during the shutdown grace period.
	workCtx, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(nil)
	var background sync.WaitGroup
	defer background.Wait()
	// stopCtx ends with ctx or with Abort: the sources, the wait for sync
	// and the workers follow it.
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	background.Go(func() {
		select {
		case <-c.aborted:
			stop()
		case <-stopCtx.Done():
		}
	})
	for _, feed := range feeds {
		background.Go(func() { feed(stopCtx) })
	}
	if o := c.owner(); o != nil {
		background.Go(func() { o.Start(stopCtx, c) })
	}
	gates := c.loadGates()
	for _, g := range gates {
		if s, ok := g.(gateStarter); ok {
			s.Starting()
		}
		background.Go(func() { g.Start(stopCtx, c) })
	}
	stopMetrics := make(chan struct{})
	background.Go(func() { c.base.runMetrics(stopMetrics) })
	defer close(stopMetrics)

	synced := make([]cache.InformerSynced, 0, len(watches)+len(gates))
	for _, w := range watches {
		synced = append(synced, (*w.reg.Load()).HasSynced)
	}
	for _, g := range gates {
		synced = append(synced, g.HasSynced)
	}
	logger.Info("Waiting for caches to sync")
	if !cache.WaitForCacheSync(stopCtx.Done(), synced...) {
		if err := c.abortError(); err != nil {
			return err
		}
		// The wait looks only now and then: handlers that synced before
		// the stop make it a normal one, with no worker to start.
		if !c.HasSynced() {
			return fmt.Errorf("queue: controller %q stopped before its caches synced: %w", c.name, context.Cause(ctx))
		}
		logger.Info("Stopped before the workers started")
		return nil
	}

	c.metrics.SetMaxWorkers(c.name, c.cfg.workers)
	logger.Info("Starting workers", "count", c.cfg.workers)
	c.working.Store(true)
	defer c.working.Store(false)
	var workers sync.WaitGroup
	for range c.cfg.workers {
		workers.Go(func() {
			for c.processNext(stopCtx, workCtx) {
			}
		})
	}
	workersDone := make(chan struct{})
	go func() {
		workers.Wait()
		close(workersDone)
	}()

	<-stopCtx.Done()
	// Wake idle workers; busy ones see stopCtx is done after their reconcile.
	q.ShutDown()
	timer := time.NewTimer(c.cfg.shutdownTimeout)
	defer timer.Stop()
	select {
	case <-c.aborted:
	default:
		logger.Info("Shutting down workers")
		select {
		case <-workersDone:
			logger.Info("All workers finished")
			return nil
		case <-c.aborted:
			timer.Reset(c.cfg.shutdownTimeout)
		case <-timer.C:
			logger.Info("Shutdown timeout reached, cancelling in-flight reconciles", "timeout", c.cfg.shutdownTimeout)
			timer.Reset(c.cfg.shutdownTimeout)
		}
	}
	if abortErr := c.abortError(); abortErr != nil {
		logger.Info("Aborting: cancelling in-flight reconciles", "cause", abortErr.Error())
		cancelWork(abortErr)
	} else {
		cancelWork(context.Canceled)
	}
	select {
	case <-workersDone:
		return c.abortError()
	case <-timer.C:
		err := fmt.Errorf("queue: controller %q: %w (waited %s after cancelling them)",
			c.name, ErrShutdownTimeout, c.cfg.shutdownTimeout)
		logger.Error(err, "Returning with reconciles that ignore their context")
		return errors.Join(c.abortError(), err)
	}
}

// abortError returns the error Abort recorded, or nil.
func (c *Controller[K]) abortError() error {
	select {
	case <-c.aborted:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.abortErr
	default:
		return nil
	}
}

// register adds the handlers of watches to their informers; on failure it
// removes those already added.
func (c *Controller[K]) register(logger klog.Logger, watches []*registration) error {
	for i, w := range watches {
		reg, err := w.add(logger)
		if err != nil {
			c.unregister(logger, watches[:i])
			return fmt.Errorf("queue: controller %q: registering handler %d: %w", c.name, i, err)
		}
		w.reg.Store(&reg)
	}
	return nil
}

// unregister removes the handlers of watches from their informers.
func (c *Controller[K]) unregister(logger klog.Logger, watches []*registration) {
	for _, w := range watches {
		reg := w.reg.Swap(nil)
		if reg == nil {
			continue
		}
		if err := w.informer.RemoveEventHandler(*reg); err != nil {
			logger.V(2).Info("Could not remove an event handler", "err", err.Error())
		}
	}
}

// processNext takes one key, reconciles it and reports whether the worker
// should go on.
func (c *Controller[K]) processNext(stopCtx, workCtx context.Context) bool {
	// The metrics clock is read when the key is handed out and when the
	// reconcile ends; both readings serve the queue's metrics and the
	// reconcile's duration. Without metrics it is not read at all.
	key, startedAt, shutdown := c.base.getTimed()
	if shutdown {
		return false
	}
	end, timed := int64(0), false
	defer func() {
		if !timed {
			end = c.base.now()
		}
		c.base.doneAt(key, end)
	}()
	if stopCtx.Err() != nil || c.abortError() != nil {
		// Stopping: leave the key; it is not worked on by this process again.
		return false
	}
	if o := c.owner(); o != nil {
		claimCtx, release, ok := o.Claim(workCtx, key)
		if !ok {
			// Another replica's key now: drop it, with its backoff.
			c.refused(key)
			return true
		}
		defer release()
		workCtx = claimCtx
	}
	gateCtx, releaseGates, ok := c.claimGates(workCtx, key)
	if !ok {
		// A gate closed for the key (its API is not served): drop it.
		c.refused(key)
		return true
	}
	defer releaseGates()
	workCtx = gateCtx
	// The triggers go to the reconcile that runs: a key refused above
	// keeps them for its next turn, if it has one (see refused).
	var triggers *pendingTriggers
	if c.cfg.tracer != nil {
		triggers = c.takeTriggers(key)
	}
	c.active.Add(1)
	defer c.active.Add(-1)
	end, timed = c.reconcileKey(workCtx, key, startedAt, triggers), true
	return true
}

// reconcileKey runs one reconcile of a key handed out at startedAt, applies
// its outcome to the queue, and returns when the reconcile ended (both on
// the metrics clock). triggers are those recorded for the key, with
// tracing on.
func (c *Controller[K]) reconcileKey(workCtx context.Context, key K, startedAt int64, triggers *pendingTriggers) (end int64) {
	// With tracing on, the reconcile's context carries its span.
	base := workCtx
	var span *reconcileSpan
	var ended spanEnd
	if c.cfg.tracer != nil {
		base, span = c.startSpan(workCtx, key, triggers)
		defer func() { span.end(ended) }()
	}
	// A logger that discards everything needs no per-key values: skip the
	// per-reconcile context and its allocation.
	var rc *reconcileContext[K]
	ctx := base
	if c.logger.GetSink() != nil {
		rc = &reconcileContext[K]{Context: base, ctrl: c, key: key, id: c.nextID.Add(1)}
		ctx = rc
		if c.loggerKey == nil {
			ctx = klog.NewContext(base, rc.getLogger())
		}
	}
	if c.cfg.reconcileTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.reconcileTimeout, errReconcileTimeout)
		defer cancel()
	}

	c.metrics.AddActiveWorkers(c.name, 1)
	res, panicked, err := c.safeReconcile(ctx, rc, key)
	end = c.base.now()
	obs := Observation{Panicked: panicked, Duration: time.Duration(end - startedAt)}
	c.metrics.AddActiveWorkers(c.name, -1)
	if err != nil && workCtx.Err() != nil {
		// The shutdown, the key's move to another replica, or a gate that
		// closed for it cancelled the reconcile: it did not fail, and the
		// key is not this process's to retry, so there is nothing to retry
		// or count.
		msg, cause := "Reconcile cancelled by the shutdown", context.Cause(workCtx)
		if !errors.Is(cause, context.Canceled) && !errors.Is(cause, ErrAborted) {
			msg = "Reconcile cancelled: its key is no longer this process's to run"
		}
		c.keyLogger(rc).V(2).Info(msg, "cause", cause.Error(), "err", err.Error())
		ended = spanEnd{result: tracing.ResultCancelled, err: err}
		return end
	}
	// Like controller-runtime, a reconcile counts as timed out when its own
	// deadline fired, whatever it returned.
	obs.TimedOut = c.cfg.reconcileTimeout > 0 && errors.Is(context.Cause(ctx), errReconcileTimeout)

	repeated := false
	if !isStale(err) { // a cache behind a write says nothing of the object
		repeated = c.noteTerminal(key, err, err != nil && errors.Is(err, &reconcile.TerminalError{}))
	}
	ended.err = err
	switch {
	case err == nil && res.RequeueAfter > 0:
		obs.Outcome = OutcomeRequeueAfter
		ended.result, ended.after = tracing.ResultRequeueAfter, res.RequeueAfter
		c.forget(key)
		c.delays.AddAfter(key, res.RequeueAfter)
	case err == nil:
		obs.Outcome = OutcomeSuccess
		ended.result = tracing.ResultSuccess
		c.forget(key)
	case isStale(err):
		// The cache is behind the controller's own write: not a failure.
		obs.Outcome = OutcomeRequeue
		ended.result, ended.requeue = tracing.ResultStale, true
		c.delays.addRetry(key, c.rateLimiter.When(key))
		c.keyLogger(rc).V(4).Info("Cache behind this controller's own write, requeued", "err", err.Error())
	case errors.Is(err, &reconcile.TerminalError{}):
		obs.Outcome = OutcomeError
		obs.Terminal = true
		ended.result = tracing.ResultTerminal
		c.forget(key)
		if repeated {
			// A periodic recheck or an unrelated event of an object that
			// still fails the same way: said once already.
			c.keyLogger(rc).V(2).Info("Reconcile failed with the same terminal error again; not retrying", "err", err.Error())
		} else {
			c.keyLogger(rc).Error(err, "Reconcile failed with a terminal error; not retrying")
		}
	default:
		obs.Outcome = OutcomeError
		ended.result, ended.requeue = tracing.ResultError, true
		// What AddRateLimited does, marked as a retry.
		c.delays.addRetry(key, c.rateLimiter.When(key))
		if isConflict(err) {
			// A 409 (a stale resourceVersion, or a create of an object the
			// cache did not show yet) is routine; the retry sees fresh state.
			c.keyLogger(rc).V(4).Info("Reconcile hit a conflict, retrying", "err", err.Error())
		} else {
			c.keyLogger(rc).Error(err, "Reconcile failed, retrying with backoff", "retries", c.queue.NumRequeues(key))
		}
	}
	c.metrics.ObserveReconcile(c.name, obs)
	return end
}

// noteTerminal records how a reconcile of key ended for the terminal-error
// log, and reports whether it ended with the same terminal error as the
// key's previous reconcile.
func (c *Controller[K]) noteTerminal(key K, err error, terminal bool) bool {
	c.terminalMu.Lock()
	defer c.terminalMu.Unlock()
	if !terminal {
		if len(c.terminal) > 0 {
			delete(c.terminal, key)
		}
		return false
	}
	note := terminalNote{msg: err.Error()}
	var te *reconcile.TerminalError
	if errors.As(err, &te) {
		note.generation = te.Generation
	}
	last, seen := c.terminal[key]
	if c.terminal == nil {
		c.terminal = map[K]terminalNote{}
	}
	c.terminal[key] = note
	return seen && last == note
}

// terminalNote is how a key's last reconcile ended with a terminal error.
type terminalNote struct {
	msg        string
	generation int64
}

// refused drops key, whose claim was refused when its turn came, with its
// backoff. Its triggers stay while the key is still this process's (an
// Ownership that holds the key, or queues it again, for later: the
// reconcile that finally runs names them), and go with the key otherwise.
func (c *Controller[K]) refused(key K) {
	c.forget(key)
	if c.Tracing() && !c.owns(key) {
		c.ForgetTriggers(key)
	}
}

// forget ends key's backoff: the rate limiter forgets its failures, and a
// retry it still waits for is dropped, as this reconcile made it needless.
func (c *Controller[K]) forget(key K) {
	c.queue.Forget(key)
	c.delays.forgetRetry(key)
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
// resourceVersion conflict or an AlreadyExists), through any wrapping.
func isConflict(err error) bool {
	return matchesAll(err, func(err error) bool {
		e, ok := err.(apierrors.APIStatus)
		return ok && e.Status().Code == http.StatusConflict
	})
}

// isStale reports whether err says only that the cache was behind the
// controller's own write (reconcile.ErrStaleCache), and is not terminal.
func isStale(err error) bool {
	return matchesAll(err, func(err error) bool {
		is, ok := err.(interface{ Is(error) bool })
		return err == reconcile.ErrStaleCache || ok && is.Is(reconcile.ErrStaleCache)
	}) &&
		!errors.Is(err, &reconcile.TerminalError{})
}

// matchesAll reports whether match holds for err or an error it wraps. A
// joined error matches only when every error it joins does, so that a real
// failure joined to a routine one is never handled quietly.
func matchesAll(err error, match func(error) bool) bool {
	if err == nil {
		return false
	}
	if match(err) {
		return true
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if inner != nil && !matchesAll(inner, match) {
				return false
			}
		}
		return slices.ContainsFunc(errs, func(e error) bool { return e != nil })
	case interface{ Unwrap() error }:
		return matchesAll(e.Unwrap(), match)
	}
	return false
}
