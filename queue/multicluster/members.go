package multicluster

import (
	"context"
	"reflect"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

// members is the Members a Fleet gives its Provider.
type members[T any] struct{ f *Fleet[T] }

var _ Refuser = members[struct{}]{}

func (m members[T]) Set(name string, cfg *rest.Config) {
	if cfg == nil {
		m.Delete(name)
		return
	}
	f := m.f
	f.mu.Lock()
	delete(f.refused, name)
	f.set.Want(name, cfg)
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Delete(name string) {
	f := m.f
	f.mu.Lock()
	delete(f.refused, name)
	f.set.Unwant(name)
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Refuse(name string, err error) {
	f := m.f
	f.mu.Lock()
	if f.refused == nil {
		f.refused = map[string]Status{}
	}
	f.refused[name] = Status{Err: err, Since: time.Now()}
	f.set.Unwant(name)
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Synced() {
	f := m.f
	f.mu.Lock()
	if !f.synced {
		f.synced = true
		f.first = f.set.Wanted()
	}
	f.mu.Unlock()
}

// sameConfig reports whether two configs reach the same cluster the same
// way. Function-valued fields cannot be compared and are left out: configs
// from kubeconfigs have none.
func sameConfig(a, b *rest.Config) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	strip := func(c *rest.Config) *rest.Config {
		c = rest.CopyConfig(c)
		c.WrapTransport, c.Dial, c.Proxy, c.RateLimiter = nil, nil, nil, nil
		c.WarningHandler, c.WarningHandlerWithContext = nil, nil
		c.Transport = nil
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// wantedNames lists the clusters the Provider reports, for the shard gate.
func (f *Fleet[T]) wantedNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set.Wanted()
}

// markTried notes that an attempt to engage name ended, for HasSynced.
func (f *Fleet[T]) markTried(name string) {
	f.mu.Lock()
	if !f.hasSynced {
		f.tried[name] = true
	}
	f.mu.Unlock()
}

// HasSynced reports whether the Provider has reported its first list of
// members and every one of them that is still a member, and this
// replica's, has been tried once (engaged, or failed): a cluster that
// cannot be reached does not keep the operator from being ready. Once
// true, it stays true.
func (f *Fleet[T]) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hasSynced {
		return true
	}
	if !f.synced {
		return false
	}
	for _, name := range f.first {
		if !f.set.IsWanted(name) || f.tried[name] {
			continue
		}
		if f.gate != nil && !f.gate.Owns(name) {
			continue
		}
		return false
	}
	f.hasSynced = true
	f.first, f.tried = nil, nil
	return true
}

// Get returns the value engage returned for cluster, while the cluster is
// ready.
func (f *Fleet[T]) Get(cluster string) (value T, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[cluster]
	if m == nil || m.e.Phase() != engagement.Ready {
		return value, false
	}
	return m.value.(T), true
}

// Status returns what the fleet knows of cluster; ok is false if this
// replica does not hold it (it is no member, or another replica's). A
// cluster its Provider refused (Refuser) is reported by every replica,
// not ready, with the Provider's error, until the Provider reports it
// again.
func (f *Fleet[T]) Status(cluster string) (s Status, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.refused[cluster]; ok {
		return s, true
	}
	m := f.members[cluster]
	if m == nil {
		return s, false
	}
	return m.status, true
}

// Members returns, sorted, the names of every member the Provider
// reports, held by this replica or not.
func (f *Fleet[T]) Members() []string { return f.wantedNames() }

// Clusters returns, sorted, the names of the clusters this replica holds:
// ready, or being engaged.
func (f *Fleet[T]) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, name := range f.set.Wanted() {
		if m := f.members[name]; m != nil && !m.e.Leaving() {
			names = append(names, name)
		}
	}
	return names
}

// Owns reports whether the key's cluster is ready here (queue.Ownership).
func (f *Fleet[T]) Owns(key Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[key.Cluster]
	return m != nil && m.e.Phase() == engagement.Ready
}

// Claim holds the key's cluster for one reconcile (queue.Ownership), if
// the cluster is ready here and, when sharded, still this replica's: the
// cluster does not finish leaving until release is called, and claimCtx
// is cancelled with ErrLeft when it starts to (or, sharded, when the
// cluster moves to another replica).
func (f *Fleet[T]) Claim(ctx context.Context, key Key) (claimCtx context.Context, release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[key.Cluster]
	if m == nil {
		return nil, nil, false
	}
	claimCtx, rel, ok := m.e.Claim(ctx)
	if !ok {
		return nil, nil, false
	}
	return claimCtx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		rel()
	}, true
}

// Start waits for ctx to end (queue.Ownership): a cluster's keys reach the
// controller through the queues of Cluster.Queue.
func (f *Fleet[T]) Start(ctx context.Context, _ queue.Enqueuer[Key]) { <-ctx.Done() }

// stopAll stops every cluster and waits until each has stopped.
func (f *Fleet[T]) stopAll() {
	f.mu.Lock()
	f.set.CancelAll()
	ms := make([]*member, 0, len(f.members))
	for _, m := range f.members {
		ms = append(ms, m)
	}
	f.mu.Unlock()
	for _, m := range ms {
		<-m.done
	}
	f.mu.Lock()
	f.forget(f.set.Forget())
	f.mu.Unlock()
}

// kicker is the queue.Enqueuer a shard gate adds owned cluster names to:
// any change of ownership makes the fleet converge.
type kicker struct{ kick chan struct{} }

func (k kicker) Add(string)                     { signal(k.kick) }
func (k kicker) AddLowPriority(string)          { signal(k.kick) }
func (k kicker) AddAfter(string, time.Duration) { signal(k.kick) }

// signal wakes the reader of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
