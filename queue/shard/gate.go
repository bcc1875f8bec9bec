package shard

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
)

// Gate restricts one queue.Controller to the keys its replica owns; give
// it to the controller with Controller.Restrict before the controller
// runs. When keys become this replica's, the Gate adds them to the
// controller at low priority.
type Gate[K comparable] struct {
	m    *Membership
	key  func(K) string
	list func() []K
	wake chan struct{}

	mu     sync.Mutex
	claims map[*claim]struct{}
	// applied are the views applied since the last scan: a key one of
	// them did not own may have been dropped meanwhile.
	applied []*view
}

// claim is one reconcile's hold on its key.
type claim struct {
	hash     uint64
	cancel   context.CancelCauseFunc
	released chan struct{}
}

var _ queue.Ownership[string] = (*Gate[string])(nil)

// Keys describes a controller's keys to a Gate.
type Keys[K comparable] struct {
	// String returns a key's string form, which is what is hashed: every
	// replica must compute it alike.
	String func(K) string
	// List returns every key the controller could be asked to reconcile,
	// typically from its primary informer's cache.
	List func() []K
}

// NewGate returns a Gate of m for a controller with the given keys.
func NewGate[K comparable](m *Membership, keys Keys[K]) *Gate[K] {
	g := &Gate[K]{m: m, key: keys.String, list: keys.List, wake: make(chan struct{}, 1), claims: map[*claim]struct{}{}}
	m.register(g)
	return g
}

// Owns reports whether this replica may reconcile key now.
func (g *Gate[K]) Owns(key K) bool { return g.m.view.Load().owns(hashKey(g.key(key))) }

// Claim reports whether key is owned now and, if so, holds it until
// release is called: a change of ownership that takes the key away
// cancels claimCtx (with a cause saying the key moved) and waits for
// release before this replica lets another have the key.
func (g *Gate[K]) Claim(ctx context.Context, key K) (claimCtx context.Context, release func(), ok bool) {
	h := hashKey(g.key(key))
	g.mu.Lock()
	defer g.mu.Unlock()
	// A process that was paused may run before its membership notices
	// that its view is stale: no new claim once the view ran out.
	if v := g.m.view.Load(); !v.owns(h) || g.m.now() >= v.validUntil {
		return nil, nil, false
	}
	claimCtx, cancel := context.WithCancelCause(ctx)
	c := &claim{hash: h, cancel: cancel, released: make(chan struct{})}
	g.claims[c] = struct{}{}
	return claimCtx, func() {
		g.mu.Lock()
		delete(g.claims, c)
		g.mu.Unlock()
		cancel(context.Canceled)
		close(c.released)
		signal(g.m.kick) // a membership may wait for the release
	}, true
}

// restrict cancels the claims v does not allow and returns what they
// close when they are released.
func (g *Gate[K]) restrict(v *view) (pending []<-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.applied) >= maxApplied {
		// A Gate whose controller does not run keeps no history: a nil
		// view owned nothing, so its next scan adds every owned key.
		g.applied = append(g.applied[:0], nil)
	}
	g.applied = append(g.applied, v)
	for c := range g.claims {
		if !v.owns(c.hash) {
			c.cancel(errMoved)
			pending = append(pending, c.released)
		}
	}
	return pending
}

func (g *Gate[K]) changed() { signal(g.wake) }

func (g *Gate[K]) holds(h uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.claims {
		if c.hash == h {
			return true
		}
	}
	return false
}

// Start adds every key that becomes this replica's to q at low priority,
// until ctx is cancelled. The Controller it restricts runs it (the Gate
// is a queue.Ownership). The count of owned keys (Metrics.SetOwnedKeys)
// is taken at every change of ownership and every ownedRecount.
func (g *Gate[K]) Start(ctx context.Context, q queue.Enqueuer[K]) {
	name := ""
	if n, ok := q.(interface{ Name() string }); ok {
		name = n.Name()
	}
	recount := time.NewTicker(ownedRecount)
	defer recount.Stop()
	var last *view
	signal(g.wake)
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		case <-recount.C:
		}
		last = g.scan(q, name, last)
	}
}

// scan adds to q the keys owned now that the view of the previous scan
// (last), or any view applied since, did not own, and returns the view
// it scanned under.
func (g *Gate[K]) scan(q queue.Enqueuer[K], name string, last *view) *view {
	g.mu.Lock()
	v := g.m.view.Load()
	since := append([]*view{last}, g.applied...)
	g.applied = nil
	g.mu.Unlock()
	owned := 0
	for _, key := range g.list() {
		h := hashKey(g.key(key))
		if !v.owns(h) {
			continue
		}
		owned++
		for _, old := range since {
			if !old.owns(h) {
				q.AddLowPriority(key)
				break
			}
		}
	}
	g.m.cfg.Metrics.SetOwnedKeys(g.m.cfg.Group, name, owned)
	return v
}

// maxApplied bounds the views a Gate remembers between two scans.
const maxApplied = 64

// ownedRecount is how often a Gate counts its keys between changes of
// ownership, as objects come and go.
const ownedRecount = 10 * time.Second

// ObjectNames returns the Keys of a controller keyed by cache.ObjectName
// whose objects are those in inf's cache (its store must be keyed by
// cache.MetaNamespaceKeyFunc, as client-go's shared informers are): their
// string form is "namespace/name".
func ObjectNames[T cache.Object](inf cache.TypedSharedIndexInformer[T]) Keys[cache.ObjectName] {
	return Keys[cache.ObjectName]{String: cache.ObjectName.String, List: func() []cache.ObjectName {
		keys := inf.GetStore().ListKeys()
		names := make([]cache.ObjectName, 0, len(keys))
		for _, k := range keys {
			if n, err := cache.ParseObjectName(k); err == nil {
				names = append(names, n)
			}
		}
		return names
	}}
}

// Metrics receives a membership's measurements; metrics.Recorder
// implements it as Prometheus series.
type Metrics interface {
	// SetMembers records how many live members this replica sees, itself
	// included.
	SetMembers(group string, n int)
	// SetOwnedKeys records how many keys of a controller this replica owns.
	SetOwnedKeys(group, controller string, n int)
	// IncHandoffs counts a change of the member list this replica works
	// under, published after its released keys were let go.
	IncHandoffs(group string)
	// ObserveTakeover records how long after a member that left was last
	// seen this replica confirmed a member list without it.
	ObserveTakeover(group string, d time.Duration)
}

// noopMetrics discards every measurement.
type noopMetrics struct{}

var _ Metrics = noopMetrics{}

// SetMembers discards n.
func (noopMetrics) SetMembers(string, int) {}

// SetOwnedKeys discards n.
func (noopMetrics) SetOwnedKeys(string, string, int) {}

// IncHandoffs discards the count.
func (noopMetrics) IncHandoffs(string) {}

// ObserveTakeover discards d.
func (noopMetrics) ObserveTakeover(string, time.Duration) {}
