package owner_test

import (
	"context"
	"maps"
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
	"github.com/ctrlkit/ctrlkit/owner"
)

// keyCounter is a concurrency-safe enqueue target.
type keyCounter struct {
	mu     sync.Mutex
	counts map[cache.ObjectName]int
}

func (c *keyCounter) Add(k cache.ObjectName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[cache.ObjectName]int{}
	}
	c.counts[k]++
}

func (c *keyCounter) snapshot() map[cache.ObjectName]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

func (c *keyCounter) count(k cache.ObjectName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[k]
}

func TestEnqueueOwnerWithSharedInformer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	client := fake.NewClientset(deployment("ns", "pre", fooRef("a")), deployment("ns", "orphan"))
	factory := informers.NewSharedInformerFactory(client, 0)
	defer func() {
		cancel()
		factory.Shutdown()
	}()

	keys := &keyCounter{}
	handler := owner.EnqueueOwner[*appsv1.Deployment](fooKind, informer.QueueFunc[cache.ObjectName](keys.Add),
		informer.WithContext(ctx))
	reg, err := factory.Apps().V1().Deployments().TypedInformer().AddTypedEventHandler(handler)
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), reg.HasSynced))

	fooA := cache.ObjectName{Namespace: "ns", Name: "a"}
	fooB := cache.ObjectName{Namespace: "ns", Name: "b"}
	assert.Equal(t, 1, keys.count(fooA), "owner of a pre-existing deployment enqueued by sync time")

	eventually := func(k cache.ObjectName, n int) {
		t.Helper()
		require.Eventually(t, func() bool { return keys.count(k) == n }, 10*time.Second, 5*time.Millisecond,
			"owner %v enqueued %d times", k, n)
	}
	deps := client.AppsV1().Deployments("ns")

	// Re-parent pre from foo a to foo b: both are told.
	pre, err := deps.Get(ctx, "pre", metav1.GetOptions{})
	require.NoError(t, err)
	pre.OwnerReferences = []metav1.OwnerReference{fooRef("b")}
	_, err = deps.Update(ctx, pre, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(fooB, 1)
	eventually(fooA, 2)

	// Delete: the current owner is told.
	require.NoError(t, deps.Delete(ctx, "pre", metav1.DeleteOptions{}))
	eventually(fooB, 2)

	// A delete the informer noticed only on a relist carries the last known
	// state, whose owner is told; one without any state names no owner.
	gone := deployment("ns", "gone", fooRef("c"))
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		OptionalObj:       gone,
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: gone},
	})
	assert.Equal(t, 1, keys.count(cache.ObjectName{Namespace: "ns", Name: "c"}))
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/pre"},
	})

	assert.Equal(t, 2, keys.count(fooA))
	assert.Equal(t, 2, keys.count(fooB))
	assert.Equal(t, map[cache.ObjectName]int{fooA: 2, fooB: 2, {Namespace: "ns", Name: "c"}: 1}, keys.snapshot(),
		"nothing else is enqueued")

	require.NoError(t, factory.Apps().V1().Deployments().Informer().RemoveEventHandler(reg))
}
