package informer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// syncConfigMap updates a ConfigMap read from a cache, unless the cache has
// not seen this process's previous update of it yet.
func syncConfigMap(ctx context.Context, client kubernetes.Interface, writes *informer.OwnWrites[cache.ObjectName], key cache.ObjectName, cm *corev1.ConfigMap) error {
	if writes.Stale(key, cm.ResourceVersion) {
		return nil // the update's watch event brings key back
	}
	updated, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	writes.Replaced(key, cm.ResourceVersion, updated.ResourceVersion)
	return nil
}

// A reconcile that runs again before the cache has the controller's own
// update skips the write that would meet a 409.
func ExampleOwnWrites() {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings", ResourceVersion: "1"}})
	reconciletest.StrictVersions(client) // a new resourceVersion on every write, as an API server
	cached, _ := client.CoreV1().ConfigMaps("ns").Get(ctx, "settings", metav1.GetOptions{})
	key := cache.MetaObjectToName(cached)
	var writes informer.OwnWrites[cache.ObjectName]

	_ = syncConfigMap(ctx, client, &writes, key, cached.DeepCopy())
	fmt.Println("the cached copy is stale:", writes.Stale(key, cached.ResourceVersion))
	current, _ := client.CoreV1().ConfigMaps("ns").Get(ctx, "settings", metav1.GetOptions{})
	fmt.Println("the cache has caught up:", !writes.Stale(key, current.ResourceVersion))
	// Output:
	// the cached copy is stale: true
	// the cache has caught up: true
}

func TestOwnWrites(t *testing.T) {
	tests := []struct {
		name         string
		old, updated string
		cached       []string // successive Stale calls
		want         []bool
	}{
		{name: "stale until the cache moves on", old: "1", updated: "2", cached: []string{"1", "1", "2", "1"}, want: []bool{true, true, false, false}},
		{name: "the cache may skip past the write", old: "1", updated: "2", cached: []string{"5", "1"}, want: []bool{false, false}},
		{name: "a write that kept the version is not recorded", old: "3", updated: "3", cached: []string{"3"}, want: []bool{false}},
		{name: "no version, nothing to compare", old: "", updated: "4", cached: []string{""}, want: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w informer.OwnWrites[string]
			w.Replaced("k", tt.old, tt.updated)
			var got []bool
			for _, rv := range tt.cached {
				got = append(got, w.Stale("k", rv))
			}
			assert.Equal(t, tt.want, got)
			assert.False(t, w.Stale("other", tt.old), "other keys are unaffected")
		})
	}

	var w informer.OwnWrites[string]
	w.Replaced("k", "1", "2")
	w.Forget("k")
	assert.False(t, w.Stale("k", "1"), "forgotten")

	// Concurrent use, checked by the race detector.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprint(i % 2)
			for range 100 {
				w.Replaced(key, "1", "2")
				w.Stale(key, "1")
				w.Stale(key, "2")
			}
		})
	}
	wg.Wait()
}
