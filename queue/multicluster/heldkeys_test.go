package multicluster_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
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
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The keys held for a member that is not ready are held once per key: a
// member whose attempts keep failing (here its second informer never
// syncs) holds no new copy of its whole list at every attempt when its
// handler's queue is not a pointer (informer.QueueFunc), and once ready
// each key is passed on once, not once per failed attempt.
func TestHeldKeysOfANonPointerQueueAreOneSet(t *testing.T) {
	c := newClusters("a")
	var mu sync.Mutex
	adds := map[multicluster.Key]int{}
	attempts := 0
	failing := true
	fn := informer.QueueFunc[multicluster.Key](func(k multicluster.Key) {
		mu.Lock()
		defer mu.Unlock()
		adds[k]++
	})
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(fn)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts++
		fail := failing
		mu.Unlock()
		if fail {
			// An informer that cannot sync: the attempt fails after the
			// sync timeout, once the ConfigMaps were listed.
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
	addsOf := func() int { mu.Lock(); defer mu.Unlock(); return adds[settings] }
	require.Eventually(t, func() bool { return addsOf() > 0 }, waitFor, time.Millisecond, "the held key was not added once the member was ready")
	assert.Never(t, func() bool { return addsOf() > 2 }, 100*time.Millisecond, time.Millisecond,
		"adds of one key, held while the member was not ready, once it is (after %d attempts)", attempts)
	assert.NoError(t, f.stop(t, waitFor))
}

// oneInformer is an informer.Factory of one informer.
type oneInformer struct {
	inf     cache.SharedIndexInformer
	started bool
	done    chan struct{}
}

func (o *oneInformer) Start(stop <-chan struct{}) {
	o.started = true
	go func() { defer close(o.done); o.inf.Run(stop) }()
}

func (o *oneInformer) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	return map[reflect.Type]bool{reflect.TypeOf(&corev1.Secret{}): cache.WaitForCacheSync(stop, o.inf.HasSynced)}
}

func (o *oneInformer) Shutdown() {
	if o.started {
		<-o.done
	}
}

// The key of an object deleted while a member is engaged again after
// failed probes, which the next attempt's list does not show, reaches a
// queue that is not a pointer (informer.QueueFunc, made anew by each
// attempt's engage function) once the member is ready again.
func TestDeletedKeyOfANonPointerQueueSurvivesTheNextAttempt(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		fn := informer.QueueFunc[multicluster.Key](func(k multicluster.Key) { ctrl.Add(k) })
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(fn)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](c.see(cl.Name)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	f := runFleet(t, engage, h.reconcile, multicluster.WithClients(c.newClient),
		multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	tracker := c.clients["a"].Tracker()
	cm := configMap("app", "doomed", "a")
	cm.Annotations = map[string]string{"reconciled-for": "a"}
	require.NoError(t, tracker.Add(cm))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Add(configMap("app", "slow", "a")))
	h.waitStarted(t)

	// The probes fail; the drain waits for the slow reconcile.
	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	require.Eventually(t, func() bool { return c.saw("a", "app", "doomed") == 2 }, waitFor, time.Millisecond, "the deletion reached the handlers")
	close(h.release)
	c.down["a"].Store(false)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return h.count(doomed) == 2 }, 2*time.Second, time.Millisecond,
		"the key of the object deleted during the drain is reconciled once the member is ready again")
}

// The keys held for a queue that is not a pointer (an informer.QueueFunc
// made by each attempt's engage function) go to the queue of the attempt
// that made the cluster ready, also when that attempt is of another
// engagement than the attempts that held them (new credentials after
// failed attempts): the queue of an engagement that is over gets none,
// and is not kept.
func TestHeldKeysAfterRotationReachTheReadyEngagementsQueue(t *testing.T) {
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
			// The old credentials may not list Secrets: its attempts
			// fail once the ConfigMaps were listed.
			cl.AddInformers(&oneInformer{inf: forbidden(), done: make(chan struct{})})
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient),
		multicluster.WithSyncTimeout(100*time.Millisecond))
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 3 }, waitFor, time.Millisecond)

	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	f.ready(t, "a")
	settings := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "settings")}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(got["two"], settings) }, waitFor, time.Millisecond,
		"the key reaches the queue of the engagement that made the cluster ready")
	assert.Never(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got["one"]) > 0 }, 100*time.Millisecond, time.Millisecond,
		"keys passed to the queue of an engagement that was never ready")
}

// forbidden returns an informer whose list and watch fail: it never
// syncs.
func forbidden() cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return nil, errors.New("forbidden") },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return nil, errors.New("forbidden") },
	}, &corev1.Secret{}, 0, cache.Indexers{})
}

// adapter is a queue that is a pointer but not the same one at every
// attempt: a small wrapper an engage function builds around its
// controller (to filter or count keys, say).
type adapter struct{ add func(multicluster.Key) }

func (a *adapter) Add(k multicluster.Key)            { a.add(k) }
func (a *adapter) AddLowPriority(k multicluster.Key) { a.add(k) }

// The keys held for a pointer queue that each attempt's engage function
// makes anew (&adapter{...}) are one set, like those of a queue that is
// not a pointer: a member whose attempts keep failing holds one copy of
// its keys, not one per attempt, and once ready each key is passed on
// once, to the queue of the attempt that made it ready.
func TestHeldKeysOfAPerAttemptPointerQueueAreOneSet(t *testing.T) {
	c := newClusters("a")
	var mu sync.Mutex
	adds := map[multicluster.Key]int{}
	attempts := 0
	failing := true
	var last *adapter // the queue of the latest attempt
	var byLast int    // the adds it got
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
		q := &adapter{}
		q.add = func(k multicluster.Key) {
			mu.Lock()
			defer mu.Unlock()
			adds[k]++
			if q == last {
				byLast++
			}
		}
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(q)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		mu.Lock()
		attempts++
		last = q
		fail := failing
		mu.Unlock()
		if fail {
			cl.AddInformers(&oneInformer{inf: forbidden(), done: make(chan struct{})})
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient),
		multicluster.WithSyncTimeout(50*time.Millisecond))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return attempts >= 4 }, waitFor, time.Millisecond)
	mu.Lock()
	failing = false
	mu.Unlock()
	f.ready(t, "a")
	settings := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "settings")}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return adds[settings] > 0 }, waitFor, time.Millisecond)
	// Once as held, and at most once more from the ready attempt's own
	// list, whose event may reach the handler after the caches synced.
	assert.Never(t, func() bool { mu.Lock(); defer mu.Unlock(); return adds[settings] > 2 }, 100*time.Millisecond, time.Millisecond,
		"a key held while the member was not ready is passed on once")
	mu.Lock()
	assert.Equal(t, adds[settings], byLast, "the key reaches the queue of the attempt that made the member ready (after %d attempts), only it", attempts)
	mu.Unlock()
	assert.NoError(t, f.stop(t, waitFor))
}

// A reconcile cancelled because its member is engaged again (new
// credentials) rather than gone runs again once the member is ready,
// whatever the informers report: here its key names no object.
func TestReconcileCancelledByRotationRunsAgain(t *testing.T) {
	c := newClusters("a")
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	runs := map[string]int{} // by the bearer token of the member's client
	r := func(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
		if key.Name != "job" {
			return reconcile.Result{}, nil
		}
		mu.Lock()
		runs[c.tokenOf("a")]++
		first := len(runs) == 1 && runs["one"] == 1
		mu.Unlock()
		if first {
			started <- struct{}{}
			<-ctx.Done()
			return reconcile.Result{}, ctx.Err()
		}
		return reconcile.Result{}, nil
	}
	f := startFleet(t, c, r)
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	job := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "job")}
	f.ctrl.Add(job)
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the reconcile did not start")
	}
	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return runs["two"] == 1 }, waitFor, time.Millisecond,
		"the key whose reconcile the rotation cancelled runs with the new credentials")
}
