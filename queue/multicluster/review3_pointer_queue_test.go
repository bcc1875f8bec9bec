package multicluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// adapter is a queue that is a pointer but not the same one at every
// attempt: a small wrapper an engage function builds around its
// controller (to filter or count keys, say).
type adapter struct{ add func(multicluster.Key) }

func (a *adapter) Add(k multicluster.Key)            { a.add(k) }
func (a *adapter) AddLowPriority(k multicluster.Key) { a.add(k) }

// The keys held for a member that is not ready are one set per queue only
// when a pointer queue is the same pointer at every attempt: a wrapper
// made by the engage function (&adapter{...}) is a new token at every
// failed attempt, so the Fleet keeps one more copy of the member's whole
// list per failed attempt (memory without bound while a member cannot
// sync one informer, backoff capped at 5m) and passes each key on once
// per failed attempt, to queues of attempts long gone.
func TestReview3HeldKeysOfAPerAttemptPointerQueueAreOneSet(t *testing.T) {
	c := newClusters("a")
	var mu sync.Mutex
	adds := map[multicluster.Key]int{}
	attempts := 0
	failing := true
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
		q := &adapter{add: func(k multicluster.Key) {
			mu.Lock()
			defer mu.Unlock()
			adds[k]++
		}}
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(q)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts++
		fail := failing
		mu.Unlock()
		if fail {
			never := cache.NewSharedIndexInformer(&cache.ListWatch{
				ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return nil, errors.New("forbidden") },
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return nil, errors.New("forbidden") },
			}, &corev1.Secret{}, 0, cache.Indexers{})
			cl.AddInformers(&oneInformer{inf: never, done: make(chan struct{})})
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient),
		multicluster.WithSyncTimeout(50*time.Millisecond))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 5 }, waitFor, time.Millisecond)
	mu.Lock()
	failing = false
	mu.Unlock()
	f.ready(t, "a")
	settings := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "settings")}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	n := adds[settings]
	mu.Unlock()
	assert.LessOrEqual(t, n, 2, "adds of one key, held while the member was not ready, once it is (after %d attempts)", attempts)
	assert.NoError(t, f.stop(t, waitFor))
}
