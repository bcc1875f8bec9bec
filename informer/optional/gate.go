package optional

import (
	"context"
	"errors"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue"
)

// AllKeys is the needs function of On for a controller whose every key
// needs the resource: a controller of the optional resource's objects.
func AllKeys[K comparable](K) bool { return true }

// On returns a Watch, for Controller.Watch, that registers h on the
// informer of inf while the controller runs (on each new one, as the
// resource comes and goes), and gates the controller's keys for which
// needs reports true on inf's resource being served (see queue.Gate):
//   - the controller's workers start, and its HasSynced turns true, once
//     inf's APIs know whether the resource is served and, if it is, h has
//     seen its informer's initial list; a resource that is not served
//     does not hold the controller back;
//   - while the resource is not served, those keys are dropped: not
//     queued, and dropped when their turn comes if they waited; their
//     reconciles in flight when it goes away are cancelled with a cause
//     wrapping ErrNotServed, neither retried nor counted as failed;
//   - when it is served again, the new informer's initial list reaches h,
//     which queues its keys again.
//
// needs may be nil: then no key is gated and only the watch follows the
// resource (a controller of other objects that also watches an optional
// resource, and reads it only while it is served). Give each Watch to
// one controller. A Watch of a nil or broken Informer (see Informer.Err)
// or a nil handler is refused by Controller.Watch.
func On[T cache.Object, K comparable](inf *Informer[T], h cache.TypedResourceEventHandler[T], needs func(K) bool) queue.Watch {
	if inf == nil || h == nil {
		return queue.Gated[K](nil)
	}
	return queue.Gated[K](&gate[T, K]{inf: inf, h: h, needs: needs})
}

// gate is the queue.Gate of On.
type gate[T cache.Object, K comparable] struct {
	inf   *Informer[T]
	h     cache.TypedResourceEventHandler[T]
	needs func(K) bool
	// synced is the sync check of h's registration while Start runs.
	synced atomic.Pointer[func() bool]
}

// Err reports why the Informer cannot work: Controller.Watch refuses
// the Watch with it.
func (g *gate[T, K]) Err() error { return g.inf.err }

// Start registers h on inf while ctx lasts.
func (g *gate[T, K]) Start(ctx context.Context, _ queue.Enqueuer[K]) {
	synced, remove := g.inf.AddEventHandler(ctx, g.h)
	g.synced.Store(&synced)
	<-ctx.Done()
	g.synced.Store(nil)
	remove()
	klog.FromContext(ctx).V(4).Info("Removed the handler of an optional resource", "resource", resourceName(g.inf.gvr))
}

// HasSynced reports whether the APIs know whether the resource is served
// and, if it is, h (or, before Start, the informer) has synced.
func (g *gate[T, K]) HasSynced() bool {
	if !g.inf.apis.HasSynced() {
		return false
	}
	if synced := g.synced.Load(); synced != nil {
		return (*synced)()
	}
	return g.inf.syncedNow()
}

// Owns reports whether key may run: it does not need the resource, or the
// resource is served.
func (g *gate[T, K]) Owns(key K) bool {
	if g.needs == nil || !g.needs(key) {
		return true
	}
	_, running := g.inf.Current()
	return running
}

// Claim returns, for a key that needs the resource, a context cancelled
// when the running informer stops; ok is false when none runs.
func (g *gate[T, K]) Claim(ctx context.Context, key K) (context.Context, func(), bool) {
	if g.needs == nil || !g.needs(key) {
		return ctx, func() {}, true
	}
	g.inf.mu.Lock()
	run := g.inf.run
	g.inf.mu.Unlock()
	if run == nil {
		return nil, nil, false
	}
	claimCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(run.ctx, func() {
		cause := context.Cause(run.ctx)
		if !errors.Is(cause, ErrNotServed) {
			// The APIs stopped: a shutdown, not a resource gone.
			cause = context.Canceled
		}
		cancel(cause)
	})
	return claimCtx, func() {
		stop()
		cancel(nil)
	}, true
}
