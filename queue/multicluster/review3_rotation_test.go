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

// Cluster.Queue promises that the keys held for a queue that is not a
// pointer are "passed on once to the q of the attempt that made the
// cluster ready". A member whose attempts fail with one config (here its
// credentials may not list Secrets, so one informer never syncs) holds
// its keys under the queue's slot with that engagement's attempt number
// (up to 6 here). Rotating the credentials (the usual fix) starts a new
// engagement whose attempts count from 1 again: its queue never replaces
// the old one (attempt > h.attempt never holds), so every key held, also
// those its own list produced before it was ready, goes to the QueueFunc
// of the engagement that left (never ready), built over its config,
// context and caches, which the Fleet keeps alive meanwhile.
func TestReview3HeldKeysAfterRotationReachTheNewEngagementsQueue(t *testing.T) {
	c := newClusters("a")
	var mu sync.Mutex
	got := map[string][]multicluster.Key{} // by the BearerToken of the engagement whose QueueFunc got the key
	attempts := 0
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (*member, error) {
		token := cl.Config.BearerToken
		fn := informer.QueueFunc[multicluster.Key](func(k multicluster.Key) {
			mu.Lock()
			got[token] = append(got[token], k)
			mu.Unlock()
			ctrl.Add(k)
		})
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(fn)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts++
		mu.Unlock()
		if token == "one" {
			// The old credentials may not list Secrets.
			never := cache.NewSharedIndexInformer(&cache.ListWatch{
				ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return nil, errors.New("forbidden") },
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return nil, errors.New("forbidden") },
			}, &corev1.Secret{}, 0, cache.Indexers{})
			cl.AddInformers(&oneInformer{inf: never, done: make(chan struct{})})
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient),
		multicluster.WithSyncTimeout(300*time.Millisecond))
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 6 }, waitFor, time.Millisecond)

	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	require.Eventually(t, func() bool { return c.tokenOf("a") == "two" }, waitFor, time.Millisecond)
	f.ready(t, "a")
	time.Sleep(200 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	// The engagement of token one was never ready: its queue must get
	// nothing; every key goes to the queue of the engagement of token two.
	assert.Empty(t, got["one"], "keys passed to the queue of the engagement that left (token one), never ready, instead of the one that made the cluster ready (token two, got %v)", got["two"])
}
