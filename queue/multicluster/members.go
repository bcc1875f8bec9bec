package multicluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

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
	f.lockedUnrefuse(name)
	f.set.Want(name, cfg)
	f.mu.Unlock()
	signal(f.kick)
}

func (m members[T]) Delete(name string) {
	f := m.f
	f.mu.Lock()
	f.lockedUnrefuse(name)
	f.set.Unwant(name)
	f.mu.Unlock()
	signal(f.kick)
	f.runSyncedHooks() // a member of the first list that is gone is not waited for
}

func (m members[T]) Refuse(name string, err error) {
	f := m.f
	f.mu.Lock()
	if f.refused == nil {
		f.refused = map[string]Status{}
	}
	// Since is when the refusal started: a Provider that refuses name
	// again for the same reason (a relist, a change of the source's
	// metadata) does not move it.
	since := time.Now()
	if prev, ok := f.refused[name]; ok && sameErr(prev.Err, err) {
		since = prev.Since
	}
	if prev, ok := f.refused[name]; !ok || !sameErr(prev.Err, err) {
		f.lockedNote(name) // refused, or for another reason
	}
	f.refused[name] = Status{Err: err, Since: since}
	f.set.Unwant(name)
	f.keys.lockedPrune()
	f.mu.Unlock()
	signal(f.kick)
	f.runSyncedHooks() // a member of the first list that is gone is not waited for
}

func (m members[T]) Synced() {
	f := m.f
	f.mu.Lock()
	if !f.synced {
		f.synced = true
		f.first = f.set.Wanted()
	}
	f.mu.Unlock()
	f.runSyncedHooks()
}

// lockedUnrefuse forgets why name was refused, if it was. f.mu is held.
func (f *Fleet[T]) lockedUnrefuse(name string) {
	if _, ok := f.refused[name]; ok {
		delete(f.refused, name)
		f.lockedNote(name)
	}
}

// sameErr reports whether a and b say the same: both nil, or the same
// message.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
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
	f.runSyncedHooks()
}

// runSyncedHooks calls, once, the functions waiting for the Fleet to sync
// (onSynced), if it has synced. It is called after each change that can
// make it sync, with f.mu not held.
func (f *Fleet[T]) runSyncedHooks() {
	f.mu.Lock()
	pending := len(f.onSynced) > 0
	f.mu.Unlock()
	if !pending || !f.HasSynced() {
		return
	}
	f.mu.Lock()
	hooks := f.onSynced
	f.onSynced = nil
	f.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}
}

// HasSynced reports whether the Provider has reported its first list of
// members and every one of them that is still a member, and this
// replica's, has been tried once (engaged, or failed): a cluster that
// cannot be reached does not keep the operator from being ready. With
// WithSharding, which members are this replica's is known only once its
// membership has synced (shard.Membership.HasSynced): until then
// HasSynced is false. Once true, it stays true.
func (f *Fleet[T]) HasSynced() bool {
	f.mu.Lock()
	latched := f.hasSynced
	f.mu.Unlock()
	if latched {
		return true
	}
	if m := f.cfg.membership; m != nil && !m.HasSynced() {
		return false
	}
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
// ready. ok is false while it is not; value may be the zero value of T
// (a nil interface or pointer) when ok is true, if engage returned that.
func (f *Fleet[T]) Get(cluster string) (value T, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[cluster]
	if m == nil || m.e.Phase() != engagement.Ready {
		return value, false
	}
	// m.value holds a T. When T is an interface type and engage returned
	// its zero value, m.value is a nil any, which the single-valued
	// assertion refuses: the comma-ok form yields the zero value then.
	value, _ = m.value.(T)
	return value, true
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
// reports, held by this replica or not, and of those it refused (their
// Status has Err the refusal): the members a status across the fleet
// lists.
func (f *Fleet[T]) Members() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := f.set.Wanted()
	for name := range f.refused {
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

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
// A controller restricted with the Fleet itself therefore drops the keys
// of a cluster that is not ready; the controllers of NewController hold
// them instead, until it is.
func (f *Fleet[T]) Owns(key Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[key.Cluster]
	return m != nil && m.lockedReady()
}

// Claim holds the key's cluster for one reconcile (queue.Ownership), if
// the cluster is ready here and, when sharded, still this replica's: the
// cluster does not finish leaving until release is called, and claimCtx
// is cancelled with a cause wrapping ErrLeft when it starts to leave or
// stops answering (or, sharded, when the cluster moves to another
// replica). A stop of the Fleet does not cancel it: ctx's own
// cancellation does.
func (f *Fleet[T]) Claim(ctx context.Context, key Key) (claimCtx context.Context, release func(), ok bool) {
	return f.claim(ctx, key, nil, nil)
}

// claim is Claim for a controller q that the keys of a cluster that is
// engaging are held for (none if q is nil), filed under token. The claim's
// context carries the cluster's value (claimedValue).
func (f *Fleet[T]) claim(ctx context.Context, key Key, token any, q queue.Enqueuer[Key]) (context.Context, func(), bool) {
	f.mu.Lock()
	m := f.members[key.Cluster]
	if m != nil {
		if sub, rel, ok := m.e.Claim(ctx); ok {
			value := m.value
			ref := new(struct{})
			if m.inflight == nil {
				m.inflight = map[*struct{}]context.Context{}
			}
			m.inflight[ref] = ctx
			f.mu.Unlock()
			return f.claimContext(ctx, sub, func(cancelled bool) {
				delete(m.inflight, ref)
				rel()
				if cancelled && q != nil {
					// The cluster stopped being ready under the
					// reconcile: if it is engaged again (new
					// credentials, failed probes) rather than gone,
					// the key runs again once it is ready.
					f.keys.lockedHold(key.Cluster, token, nil, q, key.ObjectName, false)
				}
			}, value)
		}
	}
	retry := false
	if q != nil {
		if m != nil && m.lockedReady() && !f.keys.stopping {
			// Ready, but its shard refuses claims for now (its view
			// ran out): the key is tried again later.
			retry = true
		} else {
			f.keys.lockedHold(key.Cluster, token, nil, q, key.ObjectName, false)
		}
	}
	f.mu.Unlock()
	if retry {
		q.AddAfter(key, claimRetryDelay)
	}
	return nil, nil, false
}

// claimRetryDelay is how long a key waits when its cluster is ready but
// its shard refused the claim.
const claimRetryDelay = time.Second

// claimedKey is the context key of the value of the claimed cluster.
type claimedKey struct{}

// claimContext returns the context of a reconcile under the sub-claim sub
// of ctx, and its release: a context of ctx that carries value, and that
// is cancelled when sub is, for another reason than ctx's end, with a
// cause wrapping ErrLeft (the shard's cause of a cluster that moved is
// its own). The release calls rel with the Fleet's mu held, telling it
// whether sub cancelled the context.
func (f *Fleet[T]) claimContext(ctx, sub context.Context, rel func(cancelled bool), value any) (context.Context, func(), bool) {
	claimCtx, cancel := context.WithCancelCause(ctx)
	var cancelled atomic.Bool
	stop := context.AfterFunc(sub, func() {
		if ctx.Err() != nil {
			return // claimCtx ends with ctx, with ctx's cause
		}
		cause := context.Cause(sub)
		if !errors.Is(cause, ErrLeft) {
			cause = fmt.Errorf("%w: %w", ErrLeft, cause)
		}
		cancelled.Store(true)
		cancel(cause)
	})
	return context.WithValue(claimCtx, claimedKey{}, value), func() {
		stop()
		cancel(context.Canceled)
		f.mu.Lock()
		defer f.mu.Unlock()
		rel(cancelled.Load())
	}, true
}

// lockedReadyOrHeld reports whether cluster is ready here or its keys are
// held until it is. The Fleet's mu is held.
func (f *Fleet[T]) lockedReadyOrHeld(cluster string) bool {
	m := f.members[cluster]
	return (m != nil && m.lockedReady()) || f.keys.lockedHolds(cluster)
}

// Start waits for ctx to end (queue.Ownership): a cluster's keys reach the
// controller through the queues of Cluster.Queue.
func (f *Fleet[T]) Start(ctx context.Context, _ queue.Enqueuer[Key]) { <-ctx.Done() }

// stopAll stops every cluster and waits until each has stopped: the
// clusters that are not ready at once, the ready ones once their
// reconciles in flight have returned (see disengage). It returns an
// error naming the clusters whose reconciles it gave up waiting for.
func (f *Fleet[T]) stopAll(ctx context.Context) error {
	f.mu.Lock()
	f.keys.stopping = true
	close(f.stopping)
	stopHooks := f.onStop
	f.onStop = nil
	for cluster, held := range f.keys.held {
		f.keys.lockedDrop(cluster, held)
	}
	f.keys.held = nil
	ms := make([]*member, 0, len(f.members))
	for _, m := range f.members {
		ms = append(ms, m)
		switch {
		case !m.lockedReady():
			m.e.Leave()
		case m.stopProbe != nil:
			m.stopProbe()
		}
	}
	f.mu.Unlock()
	for _, fn := range stopHooks {
		fn()
	}
	for _, m := range ms {
		<-m.done
	}
	f.mu.Lock()
	var abandoned []string
	for _, m := range ms {
		if m.abandoned {
			abandoned = append(abandoned, m.name)
		}
	}
	f.set.CancelAll()
	leave := f.lockedForget(f.set.Forget())
	f.mu.Unlock()
	leave()
	if len(abandoned) == 0 {
		return nil
	}
	slices.Sort(abandoned)
	err := fmt.Errorf("multicluster: fleet %q: reconciles of clusters %v still running %s after their controllers cancelled them: left behind, their clusters stopped", f.name, abandoned, f.cfg.clientWait)
	klog.FromContext(ctx).Error(err, "Returning with reconciles that ignore their context")
	return err
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
