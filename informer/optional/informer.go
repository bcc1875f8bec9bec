package optional

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informer is the informer of a resource that may not be served (see the
// package documentation). Make it with NewInformer before its APIs start;
// the APIs run it.
type Informer[T cache.Object] struct {
	apis        *APIs
	gvr         schema.GroupVersionResource
	cfg         config
	err         error
	newInformer func() cache.TypedSharedIndexInformer[T]
	// known is set once the APIs decided whether the resource is served.
	known atomic.Bool
	// ended is set once the APIs shut down.
	ended atomic.Bool

	mu       sync.Mutex
	state    State                // guarded by mu
	run      *instance[T]         // guarded by mu; nil unless Running
	handlers map[*handler[T]]bool // guarded by mu; registered on every instance
	// nextRun is closed when the next informer starts (nil until asked
	// for). guarded by mu.
	nextRun chan struct{}
}

// instance is one informer an Informer made, from the start to the stop
// of its resource being served.
type instance[T cache.Object] struct {
	inf cache.TypedSharedIndexInformer[T]
	// ctx ends when the instance is stopped: its informer's run.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// gone ends, with a cause wrapping ErrNotServed, when the instance is
	// stopped because its resource is no longer served (not when its
	// APIs shut down): the claims on it end with it.
	gone     context.Context
	markGone context.CancelCauseFunc
	done     chan struct{} // closed once the informer's Run returned
	// uid is the UID of the CRD the instance started for ("" when
	// followed by discovery).
	uid  types.UID
	regs map[*handler[T]]cache.ResourceEventHandlerRegistration
}

// handler is a handler added to an Informer.
type handler[T cache.Object] struct {
	h      cache.TypedResourceEventHandler[T]
	logger klog.Logger
}

// NewInformer returns the Informer of gvr on apis. Each time gvr becomes
// served, newInformer is called for a new informer of it (a typed
// informer of a new generated factory, or a dynamic informer wrapped with
// cache.NewTypedSharedIndexInformer), which the Informer runs until gvr is
// no longer served; it must return an informer that has not run, every
// time (a factory's informers cannot be started again once stopped). The
// resource is followed by its CRD, or by discovery with FromDiscovery.
// Mistakes (a nil apis or newInformer, an option of NewAPIs, a call after
// the APIs started) are reported by Err, and by the APIs' Err.
func NewInformer[T cache.Object](apis *APIs, gvr schema.GroupVersionResource, newInformer func() cache.TypedSharedIndexInformer[T], opts ...Option) *Informer[T] {
	cfg := newConfig(opts)
	i := &Informer[T]{apis: apis, gvr: gvr, cfg: cfg, newInformer: newInformer, state: Waiting, handlers: map[*handler[T]]bool{}}
	switch {
	case apis == nil:
		i.err = errors.New("optional: NewInformer needs APIs")
	case newInformer == nil:
		i.err = fmt.Errorf("optional: NewInformer of %s needs a function that makes informers", resourceName(gvr))
	case gvr.Version == "" || gvr.Resource == "":
		i.err = fmt.Errorf("optional: NewInformer needs a version and a resource, got %q", resourceName(gvr))
	case len(cfg.apisOnly) > 0:
		i.err = fmt.Errorf("optional: %s applies to NewAPIs, not NewInformer", cfg.apisOnly[0])
	default:
		i.err = apis.add(i)
	}
	if i.err != nil && apis != nil {
		apis.mu.Lock()
		apis.err = errors.Join(apis.err, i.err)
		apis.mu.Unlock()
	}
	return i
}

// Err reports why the Informer cannot work, or nil: a mistake in its
// making, or the error of its APIs (see APIs.Err), which then run nothing.
func (i *Informer[T]) Err() error {
	if i.err != nil || i.apis == nil {
		return i.err
	}
	if err := i.apis.Err(); err != nil {
		return fmt.Errorf("optional: the APIs of %s cannot work: %w", resourceName(i.gvr), err)
	}
	return nil
}

// Resource returns the resource the Informer watches.
func (i *Informer[T]) Resource() schema.GroupVersionResource { return i.gvr }

// State returns what the Informer does now.
func (i *Informer[T]) State() State {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state
}

// Current returns the informer running now, for its lister and indexer,
// and true; nil and false while the resource is not served. A reconcile
// should read it each time: the informer is a new one after the resource
// comes back.
func (i *Informer[T]) Current() (cache.TypedSharedIndexInformer[T], bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.run == nil {
		return nil, false
	}
	return i.run.inf, true
}

// HasSynced reports whether the Informer has what it should: its APIs
// have decided whether its resource is served (from its CRD once the CRD
// informer synced; with FromDiscovery, once discovery was asked about its
// group version, a failed request taking it as not served) and, if it is,
// the running informer has synced. It depends on its own resource only:
// another resource whose discovery fails or hangs does not hold it back.
func (i *Informer[T]) HasSynced() bool {
	return i.apis != nil && i.hasSynced()
}

func (i *Informer[T]) decided()        { i.known.Store(true) }
func (i *Informer[T]) hasSynced() bool { return i.known.Load() && i.syncedNow() }

// syncedNow reports whether no informer runs or the running one synced.
func (i *Informer[T]) syncedNow() bool {
	inf, ok := i.Current()
	return !ok || inf.HasSynced()
}

// AddEventHandler registers h on the running informer, if any, and on
// every informer made later, until remove is called: for handlers outside
// a queue.Controller, such as those of a fleet's member (Cluster.Queue).
// synced reports whether h has seen the initial list of the running
// informer (true when none runs).
func (i *Informer[T]) AddEventHandler(ctx context.Context, h cache.TypedResourceEventHandler[T]) (synced func() bool, remove func()) {
	hd := &handler[T]{h: h, logger: klog.FromContext(ctx)}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers[hd] = true
	if i.run != nil {
		i.lockedRegister(i.run, hd)
	}
	return func() bool { return i.handlerSynced(hd) }, func() { i.removeHandler(hd) }
}

// current returns the running instance, nil when none runs.
func (i *Informer[T]) current() *instance[T] {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.run
}

// started returns a channel closed when the Informer next starts an
// informer (the resource is served again).
func (i *Informer[T]) started() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.nextRun == nil {
		i.nextRun = make(chan struct{})
	}
	return i.nextRun
}

// handlerSynced reports whether hd has seen the initial list of the
// running informer, true when none runs.
func (i *Informer[T]) handlerSynced(hd *handler[T]) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.run == nil {
		return true
	}
	reg, ok := i.run.regs[hd]
	return ok && reg.HasSynced()
}

// removeHandler removes hd from the Informer and its running informer.
func (i *Informer[T]) removeHandler(hd *handler[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.handlers, hd)
	if i.run == nil {
		return
	}
	if reg, ok := i.run.regs[hd]; ok {
		delete(i.run.regs, hd)
		if err := i.run.inf.RemoveEventHandler(reg); err != nil {
			hd.logger.V(2).Info("Could not remove an event handler", "resource", resourceName(i.gvr), "err", err.Error())
		}
	}
}

// lockedRegister registers hd on the informer of run. The caller holds
// i.mu.
func (i *Informer[T]) lockedRegister(run *instance[T], hd *handler[T]) {
	reg, err := run.inf.AddTypedEventHandler(hd.h, cache.HandlerOptions{Logger: &hd.logger})
	if err != nil {
		// Only a stopped informer refuses, and run's stops only with run.
		hd.logger.Error(err, "Could not add an event handler", "resource", resourceName(i.gvr))
		return
	}
	run.regs[hd] = reg
}

func (i *Informer[T]) resource() schema.GroupVersionResource { return i.gvr }
func (i *Informer[T]) byDiscovery() bool                     { return i.cfg.fromDiscovery }
func (i *Informer[T]) objectType() reflect.Type              { return reflect.TypeFor[T]() }

// follow starts an informer when the resource is served and none runs,
// stops the running one when it is not served, and restarts it when it
// started for another CRD (one deleted and created again).
func (i *Informer[T]) follow(ctx context.Context, served bool, uid types.UID) {
	logger := klog.FromContext(ctx).WithValues("resource", resourceName(i.gvr))
	i.mu.Lock()
	running := i.run != nil
	recreated := running && i.run.uid != uid
	i.mu.Unlock()
	if served && recreated && i.stopRun(true) {
		if i.apis.cfg.metrics != nil {
			i.apis.cfg.metrics.IncAPIWatchStops(i.apis.cfg.name, resourceName(i.gvr))
		}
		i.apis.setState(i.gvr, Stopped)
		logger.Info("Resource's CRD deleted and created again: its watch stopped, its keys dropped; it starts again for the new CRD")
		running = false
	}
	switch {
	case served && !running:
		inf := i.newInformer()
		if inf == nil {
			logger.Error(nil, "The function of NewInformer returned no informer; the resource stays unwatched")
			return
		}
		// Between a CRD's removal and the stop it causes, a relist may
		// find the resource gone: said quietly, as the stop follows. A
		// resource followed by discovery whose list or watch answers 503
		// (an aggregated API whose backend is down) is stopped and held
		// off, instead of listed again and logged in a loop.
		if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if ctx.Err() != nil {
				// The informer is being stopped: its request was
				// cancelled, nothing failed.
				return
			}
			if apierrors.IsNotFound(err) {
				logger.V(2).Info("Resource not found by its watch; stopping it once its removal is seen", "err", err.Error())
				i.apis.wake()
				return
			}
			if i.cfg.fromDiscovery && apierrors.IsServiceUnavailable(err) {
				logger.V(2).Info("Resource unavailable to its watch; stopping it until discovery serves it again", "err", err.Error())
				i.apis.watchUnavailable(i.gvr.GroupVersion())
				return
			}
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}); err != nil {
			logger.Error(err, "The function of NewInformer returned an informer that ran already; the resource stays unwatched")
			return
		}
		runCtx, cancel := context.WithCancelCause(ctx)
		// gone does not end with ctx: a shutdown leaves the reconciles in
		// flight to the controller's drain.
		gone, markGone := context.WithCancelCause(context.WithoutCancel(ctx))
		run := &instance[T]{
			inf: inf, ctx: runCtx, cancel: cancel, gone: gone, markGone: markGone,
			done: make(chan struct{}), uid: uid, regs: map[*handler[T]]cache.ResourceEventHandlerRegistration{},
		}
		i.mu.Lock()
		for hd := range i.handlers {
			i.lockedRegister(run, hd)
		}
		i.run, i.state = run, Running
		if i.nextRun != nil {
			close(i.nextRun)
			i.nextRun = nil
		}
		i.mu.Unlock()
		i.apis.setState(i.gvr, Running)
		logger.Info("Resource served: starting its watch")
		i.apis.wg.Go(func() {
			defer close(run.done)
			inf.RunWithContext(runCtx)
		})
	case !served && running:
		if i.stopRun(true) {
			if i.apis.cfg.metrics != nil {
				i.apis.cfg.metrics.IncAPIWatchStops(i.apis.cfg.name, resourceName(i.gvr))
			}
			i.apis.setState(i.gvr, Stopped)
			logger.Info("Resource no longer served: its watch stopped, its keys dropped; it starts again when the resource is served")
		}
	}
}

// stop stops the running informer, if any, and waits for it: its APIs
// shut down. The claims on it are left to the controller's drain. The
// Informer is Stopped after it, whether or not an informer ran.
func (i *Informer[T]) stop() {
	i.ended.Store(true)
	i.stopRun(false)
	i.mu.Lock()
	i.state = Stopped
	i.mu.Unlock()
}

// running reports whether an informer runs.
func (i *Informer[T]) running() bool {
	_, ok := i.Current()
	return ok
}

// stopRun stops the running informer, if any, and waits for it; it
// reports whether one ran. notServed says why: the resource is no longer
// served (or its CRD was recreated), which cancels the claims on it, or,
// when false, the APIs shut down, which leaves them be.
func (i *Informer[T]) stopRun(notServed bool) bool {
	i.mu.Lock()
	run := i.run
	if run == nil {
		i.mu.Unlock()
		return false
	}
	i.run, i.state = nil, Stopped
	if notServed {
		err := fmt.Errorf("%w: %s", ErrNotServed, resourceName(i.gvr))
		run.markGone(err)
		run.cancel(err)
	} else {
		run.cancel(context.Canceled)
	}
	i.mu.Unlock()
	<-run.done
	return true
}
