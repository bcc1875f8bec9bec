package multicluster

import (
	"context"
	"reflect"
	"slices"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
)

// members is the Members a Fleet gives its Provider.
type members[T any] struct{ f *Fleet[T] }

func (m members[T]) Set(name string, cfg *rest.Config) {
	if cfg == nil {
		m.Delete(name)
		return
	}
	f := m.f
	f.mu.Lock()
	if old, ok := f.wanted[name]; !ok || !sameConfig(old, cfg) {
		f.wanted[name] = cfg
	}
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Delete(name string) {
	f := m.f
	f.mu.Lock()
	delete(f.wanted, name)
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Synced() {
	f := m.f
	f.mu.Lock()
	if !f.synced {
		f.synced = true
		for name := range f.wanted {
			f.first = append(f.first, name)
		}
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
	names := make([]string, 0, len(f.wanted))
	for name := range f.wanted {
		names = append(names, name)
	}
	return names
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
		if _, wanted := f.wanted[name]; !wanted || f.tried[name] {
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
	m := f.member(cluster)
	if m == nil {
		return value, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		return value, false
	}
	return m.value.(T), true
}

// Status returns what the fleet knows of cluster; ok is false if this
// replica does not hold it (it is no member, or another replica's).
func (f *Fleet[T]) Status(cluster string) (s Status, ok bool) {
	m := f.member(cluster)
	if m == nil {
		return s, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status, true
}

// Members returns, sorted, the names of every member the Provider
// reports, held by this replica or not.
func (f *Fleet[T]) Members() []string {
	names := f.wantedNames()
	slices.Sort(names)
	return names
}

// Clusters returns, sorted, the names of the clusters this replica holds:
// ready, or being engaged.
func (f *Fleet[T]) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for name, m := range f.members {
		if _, wanted := f.wanted[name]; wanted && !m.leaving {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func (f *Fleet[T]) member(cluster string) *member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members[cluster]
}

// Owns reports whether the key's cluster is ready here (queue.Ownership).
func (f *Fleet[T]) Owns(key Key) bool {
	m := f.member(key.Cluster)
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

// Claim holds the key's cluster for one reconcile (queue.Ownership): the
// cluster does not finish leaving until release is called, and claimCtx
// is cancelled with ErrLeft when it starts to.
func (f *Fleet[T]) Claim(ctx context.Context, key Key) (claimCtx context.Context, release func(), ok bool) {
	m := f.member(key.Cluster)
	if m == nil {
		return nil, nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ready {
		return nil, nil, false
	}
	claimCtx, cancel := context.WithCancelCause(ctx)
	c := &claim{cancel: cancel}
	m.claims[c] = struct{}{}
	m.inflight.Add(1)
	return claimCtx, func() {
		m.mu.Lock()
		delete(m.claims, c)
		m.mu.Unlock()
		cancel(context.Canceled)
		m.inflight.Done()
	}, true
}

// Start waits for ctx to end (queue.Ownership): a cluster's keys reach the
// controller through the queues of Cluster.Queue.
func (f *Fleet[T]) Start(ctx context.Context, _ queue.Enqueuer[Key]) { <-ctx.Done() }

// stopAll stops every cluster and waits until each has stopped.
func (f *Fleet[T]) stopAll() {
	f.mu.Lock()
	ms := make([]*member, 0, len(f.members))
	for _, m := range f.members {
		m.cancel(ErrLeft)
		ms = append(ms, m)
	}
	f.mu.Unlock()
	for _, m := range ms {
		<-m.done
	}
	f.mu.Lock()
	for name := range f.members {
		f.forget(name)
	}
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
