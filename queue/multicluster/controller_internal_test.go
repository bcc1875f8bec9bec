package multicluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
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
