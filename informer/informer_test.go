package informer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The handler on a real shared informer, with the registration gating on the
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
	r := &recorder{}
	handler := informer.EnqueueHandler[*appsv1.Deployment](informer.QueueFunc[cache.ObjectName](sink.Add),
		informer.WithPredicates(informer.ResourceVersionChanged()),
		informer.WithContext(ctx),
		informer.WithErrorHandler(r.errorHandler))
	reg, err := depInformer.Informer().AddEventHandler(handler)
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
		assert.Eventually(t, func() bool { return sink.count(k) == n }, 10*time.Second, 5*time.Millisecond,
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

	// A delete the informer only noticed on a relist arrives as a tombstone.
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: deployment("ns", "gone")})
	assert.Equal(t, 1, sink.count(cache.ObjectName{Namespace: "ns", Name: "gone"}))

	_, reports := r.snapshot()
	assert.Empty(t, reports)

	require.NoError(t, depInformer.Informer().RemoveEventHandler(reg))
}
