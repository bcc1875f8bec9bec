package multicluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

// The retries of one cluster spend its own budget: after a storm of
// failures in one cluster, a key of another is retried after the base
// delay. A cluster that left takes its limiter with it.
func TestPerClusterRateLimiter(t *testing.T) {
	p := &perCluster{limiters: map[string]workqueue.TypedRateLimiter[any]{}}
	key := func(cluster string, i int) Key {
		return Key{Cluster: cluster, ObjectName: cache.NewObjectName("ns", fmt.Sprint("cm-", i))}
	}
	var last time.Duration
	for i := range 3 * queue.DefaultRetryBurst {
		last = p.When(key("failing", i))
	}
	assert.Greater(t, last, time.Second, "the failing cluster's retry budget is spent")
	assert.Equal(t, queue.DefaultBaseDelay, p.When(key("healthy", 0)), "a healthy cluster's first retry")
	assert.Equal(t, 1, p.NumRequeues(key("healthy", 0)))

	p.forget("failing")
	assert.Zero(t, p.NumRequeues(key("failing", 0)))
	p.Forget(key("gone", 0))
	assert.NotContains(t, p.limiters, "gone", "Forget of a cluster without a limiter makes one")
	assert.Equal(t, queue.DefaultBaseDelay, p.When(key("failing", 0)), "a cluster that comes back starts afresh")
}

// The queues that are not pointers stand for the queue of an earlier
// attempt passed to Cluster.Queue in the same place: the n-th of their
// type and code. Two queues of one attempt never share their held keys.
func TestQueueTokensAcrossAttempts(t *testing.T) {
	type valueQueue struct{ informer.QueueFunc[Key] }
	engage := func(cl *Cluster) []any {
		var tokens []any
		add := func(q informer.Queue[Key]) {
			token, _ := cl.register(q)
			tokens = append(tokens, token)
		}
		for range 2 {
			add(informer.QueueFunc[Key](func(Key) {}))
		}
		add(informer.QueueFunc[Key](func(Key) {}))
		add(valueQueue{})
		add(&queue.Controller[Key]{})
		return tokens
	}
	first, second := engage(&Cluster{}), engage(&Cluster{})
	for i := range 4 {
		assert.Equal(t, first[i], second[i], "queue %d of two attempts", i)
		for j := range i {
			assert.NotEqual(t, first[i], first[j], "queues %d and %d of one attempt", j, i)
		}
	}
	assert.NotSame(t, first[4], second[4], "two controllers are two tokens")
}

// The keys held for the queues of earlier attempts are filed under the
// queues of each new attempt once its engage function returned: a
// pointer queue made anew at every attempt, like a queue that is not a
// pointer, has one set of held keys, however many attempts failed; a
// controller's own holds stay its own.
func TestKeeperAdoptsTheQueuesOfEachAttempt(t *testing.T) {
	set := engagement.New[*rest.Config](nil, func(a, b *rest.Config) bool { return a == b }, errors.New("left"))
	set.Want("a", &rest.Config{})
	k := &keeper{set: set}
	type adder struct{ informer.QueueFunc[Key] }
	var direct []Key
	ctrl := &adder{QueueFunc: func(k Key) { direct = append(direct, k) }}
	name := func(n string) cache.ObjectName { return cache.NewObjectName("ns", n) }
	for attempt := range 3 {
		cl := &Cluster{}
		q := &adder{}
		token, slot := cl.register(q)
		k.lockedAdopt("a", cl.registered(), false)
		k.lockedHold("a", token, &slot, q, name(fmt.Sprint("object-", attempt)), false)
		k.lockedHold("a", token, &slot, q, name("shared"), true)
		k.lockedHold("a", ctrl, nil, ctrl, name("direct"), false)
		require.Len(t, k.held["a"], 2, "held sets after attempt %d: one for the adder, one for the controller", attempt)
	}
	for _, h := range k.held["a"] {
		if h.slot == nil {
			assert.Equal(t, []cache.ObjectName{name("direct")}, h.order)
			continue
		}
		assert.Equal(t, []cache.ObjectName{name("object-0"), name("shared"), name("object-1"), name("object-2")}, h.order)
		assert.Equal(t, map[cache.ObjectName]bool{name("object-0"): true, name("shared"): false, name("object-1"): true, name("object-2"): true}, h.pending)
	}
	// An attempt that passes no such queue makes the cluster ready: the
	// set is dropped with its queue, the controller's kept.
	release := k.lockedTake("a", (&Cluster{}).registered())
	assert.Empty(t, k.held)
	release()
	assert.Equal(t, []Key{{Cluster: "a", ObjectName: name("direct")}}, direct)
}

// idle is a Provider that reports no member.
type idle struct{}

func (idle) Run(ctx context.Context, _ Members) error { <-ctx.Done(); return nil }

// An attempt of a member told to leave before it began (its backoff and
// the leave ending together) builds no client and calls no engage
// function.
func TestAttemptOfALeavingMemberBuildsNothing(t *testing.T) {
	var calls atomic.Int32
	f, err := New("test", idle{}, func(context.Context, *Cluster) (struct{}, error) {
		calls.Add(1)
		return struct{}{}, nil
	}, WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
		calls.Add(1)
		return fake.NewClientset(), nil
	}))
	require.NoError(t, err)
	f.set.Want("a", &rest.Config{Host: "https://a"})
	started, _ := f.set.Converge(context.Background())
	require.Len(t, started, 1)
	m := &member{name: "a", e: started[0], mu: &f.mu, keys: f.keys, done: make(chan struct{})}
	f.mu.Lock()
	started[0].Leave()
	f.mu.Unlock()
	stop, client, err := f.attempt(started[0].Context(), m)
	stop()
	f.building.Wait()
	f.engaging.Wait()
	require.ErrorIs(t, err, ErrLeft)
	assert.Nil(t, client)
	assert.Zero(t, calls.Load(), "client constructor and engage calls")
}
