package optional

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
//     wrapping ErrNotServed, neither retried nor counted as failed (a
//     shutdown of the APIs cancels none: on a normal stop the controller
//     lets them finish within its shutdown timeout, though Current then
//     reports no informer);
//   - when it is served again, the new informer's initial list reaches h,
//     which queues its keys again, and once h has seen it, the keys
//     dropped or cancelled meanwhile are queued again too, also those
//     that came from elsewhere (another watch, Add), and a reconcile
//     cancelled as the resource went away that returns only after that
//     has its key queued at once; a controller that was ready stays
//     ready meanwhile (HasSynced does not turn false again while the
//     controller runs);
//   - before the controller runs (a standby replica, whose Run has not
//     begun), its HasSynced is the Informer's (see Informer.HasSynced),
//     as it is a watched informer's: a standby whose caches synced is
//     ready.
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

	mu sync.Mutex
	// started is set from Starting (or Start) until Start returns: the
	// controller runs. guarded by mu.
	started bool
	// run counts the controller's runs and their ends, so that a check
	// of one run does not mark another ready. guarded by mu.
	run uint64
	// synced is the sync check of h's registration while Start runs, nil
	// before it registered h. guarded by mu.
	synced func() bool
	// ready is set once HasSynced reported true during this run: it stays
	// true until Start returns. guarded by mu.
	ready bool
	// dropped holds the keys dropped while the resource was not served,
	// to queue again when it is. guarded by mu.
	dropped map[K]struct{}
	// q is the queue of Start while it runs, nil otherwise. guarded by
	// mu.
	q queue.Enqueuer[K]
	// flushed is the informer whose initial list h has seen and for which
	// the dropped keys were queued again, nil before: a key dropped while
	// it still runs is queued at once, not recorded (no later requeue
	// would take it). guarded by mu.
	flushed *instance[T]
}

// Err reports why the Informer cannot work: Controller.Watch refuses
// the Watch with it.
func (g *gate[T, K]) Err() error { return g.inf.Err() }

// Starting is called by the controller's Run just before Start: from
// then on HasSynced reports on h, no longer on the Informer alone.
func (g *gate[T, K]) Starting() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lockedBegin()
}

// lockedBegin begins a run, unless one has begun. g.mu is held.
func (g *gate[T, K]) lockedBegin() {
	if g.started {
		return
	}
	g.started, g.run, g.synced, g.ready = true, g.run+1, nil, false
}

// Start registers h on inf while ctx lasts, and queues the keys dropped
// while the resource was not served each time it is served again.
func (g *gate[T, K]) Start(ctx context.Context, q queue.Enqueuer[K]) {
	g.mu.Lock()
	g.lockedBegin()
	run := g.run
	g.q, g.flushed = q, nil
	g.mu.Unlock()
	synced, remove := g.inf.AddEventHandler(ctx, g.h)
	g.mu.Lock()
	if g.run == run {
		g.synced = synced
	}
	g.mu.Unlock()
	g.requeueDropped(ctx, q, synced)
	g.mu.Lock()
	if g.run == run {
		g.started, g.run, g.synced, g.ready = false, g.run+1, nil, false
		g.q, g.flushed = nil, nil
	}
	g.mu.Unlock()
	remove()
	klog.FromContext(ctx).V(4).Info("Removed the handler of an optional resource", "resource", resourceName(g.inf.gvr))
}

// HasSynced reports, while the controller runs (from just before Start
// until it returns), whether Start has registered h, the APIs know
// whether the resource is served and, if it is, h has seen its informer's
// initial list (another resource of the APIs does not hold it back);
// once true, it stays true until Start returns: an informer started
// later (the resource installed, or back) does not take the controller's
// readiness away. Before the controller runs (a standby replica) and
// after, it reports what the Informer's HasSynced does, as
// Controller.HasSynced does for a watched informer: the APIs know whether
// the resource is served and the running informer, if any, has synced.
func (g *gate[T, K]) HasSynced() bool {
	g.mu.Lock()
	started, run, synced, ready := g.started, g.run, g.synced, g.ready
	g.mu.Unlock()
	switch {
	case !started:
		return g.inf.HasSynced()
	case ready:
		return true
	case synced == nil || !g.inf.known.Load() || !synced():
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.run != run {
		// Start returned meanwhile: this check was of a run that ended.
		return false
	}
	g.ready = true
	return true
}

// requeueDropped queues the keys dropped while the resource was not
// served, each time an informer of it runs and h has seen its initial
// list (the keys h maps come from that list too; a key queued twice runs
// once), until ctx ends. From then on until that informer stops, a key
// dropped is queued at once (see drop).
func (g *gate[T, K]) requeueDropped(ctx context.Context, q queue.Enqueuer[K], synced func() bool) {
	for {
		next := g.inf.started()
		if run := g.inf.current(); run != nil {
			err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
				return synced(), nil
			})
			if err != nil {
				return
			}
			g.mu.Lock()
			if g.inf.current() != run {
				// Another informer runs, or none: h has not seen its
				// list; the keys wait for it.
				g.mu.Unlock()
				continue
			}
			g.flushed = run
			dropped := g.dropped
			g.dropped = nil
			g.mu.Unlock()
			for key := range dropped {
				// Dropped again if the resource went away meanwhile.
				q.Add(key)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
	}
}

// drop records key, dropped while the resource was not served, to be
// queued again with the others when an informer runs and h has seen its
// list; if that requeue is done already (the resource came back before
// the key's reconcile, cancelled as it went away, returned), key is
// queued at once instead. The check and the record are made under g.mu,
// as requeueDropped takes the keys, so that no key falls between them.
func (g *gate[T, K]) drop(key K) {
	g.mu.Lock()
	if run := g.inf.current(); run != nil && run == g.flushed && g.q != nil {
		q := g.q
		g.mu.Unlock()
		q.Add(key)
		return
	}
	defer g.mu.Unlock()
	g.lockedRecord(key)
}

// lockedRecord records key, to be queued again. g.mu is held.
func (g *gate[T, K]) lockedRecord(key K) {
	if g.dropped == nil {
		g.dropped = map[K]struct{}{}
	}
	g.dropped[key] = struct{}{}
}

// Owns reports whether key may run: it does not need the resource, or the
// resource is served. A key refused is queued again when the resource is
// served: it is checked and recorded under g.mu, as requeueDropped takes
// the keys, so that an informer started meanwhile either owns it or
// finds it recorded.
func (g *gate[T, K]) Owns(key K) bool {
	if g.needs == nil || !g.needs(key) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inf.current() != nil {
		return true
	}
	g.lockedRecord(key)
	return false
}

// Claim returns, for a key that needs the resource, a context cancelled
// when the resource is no longer served (not when the APIs shut down);
// ok is false when no informer runs, and the key is then queued again
// when the resource is served.
func (g *gate[T, K]) Claim(ctx context.Context, key K) (context.Context, func(), bool) {
	if g.needs == nil || !g.needs(key) {
		return ctx, func() {}, true
	}
	claimCtx, release, ok := g.inf.claim(ctx)
	if !ok {
		g.drop(key)
		return nil, nil, false
	}
	return claimCtx, func() {
		if errors.Is(context.Cause(claimCtx), ErrNotServed) {
			// Cancelled as the resource went away: not retried, so
			// run again when it is back.
			g.drop(key)
		}
		release()
	}, true
}

// claim returns a context derived from ctx that is cancelled when the
// running informer stops because its resource is no longer served, with
// a cause wrapping ErrNotServed, and its release; ok is false when no
// informer runs. A shutdown of the APIs does not cancel it: the
// controller drains its reconciles within its shutdown timeout, and
// cancels them itself past it.
func (i *Informer[T]) claim(ctx context.Context) (context.Context, func(), bool) {
	i.mu.Lock()
	run := i.run
	i.mu.Unlock()
	if run == nil {
		return nil, nil, false
	}
	claimCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(run.gone, func() { cancel(context.Cause(run.gone)) })
	return claimCtx, func() {
		stop()
		cancel(nil)
	}, true
}

// MemberGate gates the keys of a fleet's controller (package
// queue/multicluster) that need a resource on the Informer of each key's
// member: a member whose resource is not served runs none of them, and
// the reconciles of its keys in flight when it goes away are cancelled,
// while the other members' keys run. Keys of a member without an Informer
// (not engaged here, or engaged without one), and those of a member whose
// Informer's APIs have not decided yet whether the resource is served (it
// engages, or engages again) or have shut down (it leaves, or engages
// again), are left to the fleet, which holds those of a member that is
// not ready until it is. Give
// Watch to the controller, and Set each member's Informer in the engage
// function. Unlike On's gate, a MemberGate does not queue again the keys
// it dropped when the member's resource is served again: only the keys
// its handlers map from the new informer's initial list are queued then.
type MemberGate[T cache.Object, K comparable] struct {
	clusterOf func(K) string
	needs     func(K) bool

	mu        sync.Mutex
	informers map[string]*Informer[T] // guarded by mu; by member
}

// NewMemberGate returns a MemberGate for keys whose member clusterOf
// names, gating those for which needs reports true (every key when needs
// is nil). For multicluster.Key, clusterOf is
// func(k multicluster.Key) string { return k.Cluster }.
func NewMemberGate[T cache.Object, K comparable](clusterOf func(K) string, needs func(K) bool) *MemberGate[T, K] {
	if needs == nil {
		needs = AllKeys[K]
	}
	return &MemberGate[T, K]{clusterOf: clusterOf, needs: needs, informers: map[string]*Informer[T]{}}
}

// Watch returns the Watch that gates the controller's keys, for
// Controller.Watch. Controller.Watch refuses it if clusterOf is nil.
func (g *MemberGate[T, K]) Watch() queue.Watch { return queue.Gated[K](g) }

// Set makes inf the Informer of cluster's keys until remove is called:
// call it in the member's engage function, and remove when its context
// ends.
func (g *MemberGate[T, K]) Set(cluster string, inf *Informer[T]) (remove func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.informers[cluster] = inf
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.informers[cluster] == inf {
			delete(g.informers, cluster)
		}
	}
}

// Err reports a MemberGate made without clusterOf.
func (g *MemberGate[T, K]) Err() error {
	if g.clusterOf == nil {
		return errors.New("optional: NewMemberGate needs a function that names a key's member")
	}
	return nil
}

// informerOf returns the Informer of key's member, nil if it has none or
// key does not need it.
func (g *MemberGate[T, K]) informerOf(key K) *Informer[T] {
	if !g.needs(key) {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.informers[g.clusterOf(key)]
}

// Start waits for ctx: the members' Informers run with their members.
func (g *MemberGate[T, K]) Start(ctx context.Context, _ queue.Enqueuer[K]) { <-ctx.Done() }

// HasSynced is true: each member's readiness is the fleet's.
func (g *MemberGate[T, K]) HasSynced() bool { return true }

// Owns reports whether key may run: it does not need the resource, its
// member has no Informer, the APIs of the member's Informer have not
// decided yet whether the resource is served or have shut down (the
// fleet holds such a key until the member is ready), or the member's
// resource is served.
func (g *MemberGate[T, K]) Owns(key K) bool {
	inf := g.informerOf(key)
	if inf == nil || !inf.known.Load() || inf.ended.Load() {
		return true
	}
	_, running := inf.Current()
	return running
}

// Claim returns, for a key of a member with an Informer, a context
// cancelled when the member's resource is no longer served (not when the
// member's APIs shut down); ok is false when no informer runs.
func (g *MemberGate[T, K]) Claim(ctx context.Context, key K) (context.Context, func(), bool) {
	inf := g.informerOf(key)
	if inf == nil {
		return ctx, func() {}, true
	}
	return inf.claim(ctx)
}
