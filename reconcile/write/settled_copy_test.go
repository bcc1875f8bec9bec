package write

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// With tracing off, the settled entries serve nothing: they only decide
// whether a write carries the trace context annotation, which an untraced
// reconcile never sets. Yet an untraced update that a webhook or
// defaulting undoes (the case the package handles without tracing: the
// server answers at the version the object had) now keeps a deep copy of
// the whole object, its data and managedFields included, for as long as
// the object stays so: a controller whose every object's update is undone
// holds a second copy of its cache (informers that strip managedFields
// included), where before a18fa64 an entry was a UID and a version.
func TestUntracedUndoneUpdateKeepsNoCopyOfTheObject(t *testing.T) {
	kube := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(kube, 0).Core().V1().ConfigMaps().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	o := New(inf)
	ctx := reconciletest.Context(t)
	client := kube.CoreV1().ConfigMaps("ns")
	big := strings.Repeat("x", 512<<10)
	cm, err := client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "big"},
		Data: map[string]string{"mode": "locked", "blob": big}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Update(cm))
	// A mutating webhook pins data.mode to "locked".
	kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data["mode"] = "locked"
		return false, nil, nil
	})
	// An untraced reconcile (no span in ctx).
	_, change, err := o.Ensure(ctx, client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "big"}}, func(cm *corev1.ConfigMap) error {
		cm.Data["mode"] = "a"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, Unchanged, change)

	o.mu.Lock()
	defer o.mu.Unlock()
	kept, ok := o.settled[cache.ObjectName{Namespace: "ns", Name: "big"}]
	if ok {
		assert.Failf(t, "tracing off, a copy of the object is kept for nothing",
			"settled holds a deep copy with %d bytes of data and %d managedFields entries, besides the cache's own copy",
			len(kept.Data["blob"]), len(kept.ManagedFields))
	}
}
