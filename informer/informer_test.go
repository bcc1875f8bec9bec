package informer_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/informer"
)

// keySink is a concurrency-safe enqueue target.
type keySink struct {
	mu   sync.Mutex
	keys []cache.ObjectName
}

func (s *keySink) Add(k cache.ObjectName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
}

func (s *keySink) count(k cache.ObjectName) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, got := range s.keys {
		if got == k {
			n++
		}
	}
	return n
}

// The handler on a real typed informer, with the registration gating on the
// initial list.
func TestEnqueueHandlerWithSharedInformer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	pre := deployment("ns", "pre", withManagedFields())
	client := fake.NewClientset(pre)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTransform(informer.StripManagedFields))
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	depInformer := factory.Apps().V1().Deployments()

	sink := &keySink{}
	handler := informer.EnqueueHandler[*appsv1.Deployment](informer.QueueFunc[cache.ObjectName](sink.Add),
		informer.WithPredicates(informer.ResourceVersionChanged()),
		informer.WithContext(ctx))
	reg, err := depInformer.TypedInformer().AddTypedEventHandler(handler)
	require.NoError(t, err)

	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), reg.HasSynced))

	// The registration has synced: the initial list has been delivered.
	preKey := cache.ObjectName{Namespace: "ns", Name: "pre"}
	assert.Equal(t, 1, sink.count(preKey), "pre-existing object enqueued before sync is reported")

	// The transform stripped managedFields from the cached object.
	cached, err := depInformer.Lister().Deployments("ns").Get("pre")
	require.NoError(t, err)
	assert.Nil(t, cached.ManagedFields)

	deps := client.AppsV1().Deployments("ns")
	bKey := cache.ObjectName{Namespace: "ns", Name: "b"}
	eventually := func(k cache.ObjectName, n int) {
		t.Helper()
		require.Eventually(t, func() bool { return sink.count(k) == n }, 10*time.Second, 5*time.Millisecond,
			"key %v enqueued %d times", k, n)
	}

	_, err = deps.Create(ctx, deployment("ns", "b"), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(bKey, 1)

	b, err := deps.Get(ctx, "b", metav1.GetOptions{})
	require.NoError(t, err)
	b.Labels = map[string]string{"changed": "yes"}
	_, err = deps.Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(bKey, 2)

	require.NoError(t, deps.Delete(ctx, "b", metav1.DeleteOptions{}))
	eventually(bKey, 3)

	require.NoError(t, depInformer.Informer().RemoveEventHandler(reg))
}

// scriptedSource is a ListerWatcher whose list the test sets and whose
// watch the test can end with an "expired" error, which makes the
// informer's reflector relist.
type scriptedSource struct {
	mu      sync.Mutex
	items   []appsv1.Deployment
	rv      int
	watcher *watch.RaceFreeFakeWatcher
}

func (s *scriptedSource) List(metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	list := &appsv1.DeploymentList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
	for _, d := range s.items {
		list.Items = append(list.Items, *d.DeepCopy())
	}
	return list, nil
}

func (s *scriptedSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watcher = watch.NewRaceFreeFake()
	return s.watcher, nil
}

// IsWatchListSemanticsUnSupported makes the reflector list and watch
// instead of streaming the list (client-go's WatchListClient feature).
func (s *scriptedSource) IsWatchListSemanticsUnSupported() bool { return true }

// setItems makes the next lists return items.
func (s *scriptedSource) setItems(items ...*appsv1.Deployment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = nil
	for _, d := range items {
		s.items = append(s.items, *d)
	}
}

// expireWatch ends the open watch as the API server does when the watch's
// resourceVersion is too old, and reports whether a watch was open.
func (s *scriptedSource) expireWatch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watcher == nil || s.watcher.IsStopped() {
		return false
	}
	s.watcher.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	s.watcher = nil
	return true
}

// Deletes that a typed informer notices only on a relist arrive as
// cache.DeletedObject with the last known state and a tombstone: the
// handlers enqueue them by key, after judging the last known state.
func TestDeletesNoticedOnARelist(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	web := deployment("ns", "web", withLabels("app", "web"), withRV("1"))
	db := deployment("ns", "db", withLabels("app", "db"), withRV("1"))
	keep := deployment("ns", "keep", withLabels("app", "web"), withRV("1"))
	source := &scriptedSource{}
	source.setItems(web, db, keep)
	inf := cache.NewTypedSharedIndexInformer[*appsv1.Deployment](
		cache.NewSharedIndexInformer(source, &appsv1.Deployment{}, 0, cache.Indexers{}))

	r := &recorder{}
	regRecorder, err := inf.AddTypedEventHandler(informer.NewHandler[*appsv1.Deployment](r.handler()))
	require.NoError(t, err)
	sink := &keySink{}
	regEnqueue, err := inf.AddTypedEventHandler(informer.EnqueueHandler[*appsv1.Deployment](
		informer.QueueFunc[cache.ObjectName](sink.Add),
		informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))))
	require.NoError(t, err)

	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), regRecorder.HasSynced, regEnqueue.HasSynced))

	webKey := cache.ObjectName{Namespace: "ns", Name: "web"}
	dbKey := cache.ObjectName{Namespace: "ns", Name: "db"}
	assert.Equal(t, 1, sink.count(webKey), "initial list")
	assert.Zero(t, sink.count(dbKey), "filtered out")

	// web and db go while the informer is not watching.
	source.setItems(keep)
	require.Eventually(t, source.expireWatch, 10*time.Second, 5*time.Millisecond, "the informer watches")

	var deletes []call
	require.Eventually(t, func() bool {
		deletes = nil
		for _, c := range r.snapshot() {
			if c.Event == "delete" {
				deletes = append(deletes, c)
			}
		}
		return len(deletes) == 2
	}, 10*time.Second, 5*time.Millisecond, "both deletes are noticed on the relist")
	assert.ElementsMatch(t, []call{
		{Event: "delete", Obj: web, Key: webKey, FinalStateUnknown: true},
		{Event: "delete", Obj: db, Key: dbKey, FinalStateUnknown: true},
	}, deletes, "deletes carry the last known state")

	require.Eventually(t, func() bool { return sink.count(webKey) == 2 }, 10*time.Second, 5*time.Millisecond,
		"the delete is enqueued")
	assert.Zero(t, sink.count(dbKey), "the delete is judged on the last known state")
}
