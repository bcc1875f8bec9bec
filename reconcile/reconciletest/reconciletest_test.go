package reconciletest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// newCopier returns a reconciler that copies a ConfigMap's data into a
// "-copy" ConfigMap and deletes a "-stale" one.
func newCopier(client *fake.Clientset, factory informers.SharedInformerFactory) reconcile.Reconciler[cache.ObjectName] {
	lister := factory.Core().V1().ConfigMaps().Lister()
	return reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		cp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-copy"}, Data: cm.Data}
		if _, err := client.CoreV1().ConfigMaps(key.Namespace).Create(ctx, cp, metav1.CreateOptions{}); err != nil {
			return reconcile.Result{}, err
		}
		if _, err := client.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name+"-copy", metav1.GetOptions{}); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, client.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name+"-stale", metav1.DeleteOptions{})
	})
}

func TestRunReportsWrites(t *testing.T) {
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-stale"}}
	client := fake.NewClientset(src, stale)
	factory := informers.NewSharedInformerFactory(client, 0)
	r := newCopier(client, factory) // the reconciler under test, with listers from factory
	reconciletest.StartInformers(t, factory)
	out := reconciletest.Run(t, r, cache.ObjectName{Namespace: "ns", Name: "a"}, &client.Fake)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"create v1/configmaps ns/a-copy", "delete v1/configmaps ns/a-stale"}, reconciletest.Describe(out.Writes))
	assert.True(t, out.Result.IsZero())
	created := reconciletest.Object[*corev1.ConfigMap](t, out.Writes[0])
	assert.Equal(t, map[string]string{"k": "v"}, created.Data)

	// A second run sees only its own requests.
	out = reconciletest.Run(t, r, cache.ObjectName{Namespace: "ns", Name: "missing"}, &client.Fake)
	require.Error(t, out.Err)
	assert.Empty(t, out.Writes)
}

func TestObjectWrongType(t *testing.T) {
	client := fake.NewClientset()
	_, err := client.CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	writes := reconciletest.WriteActions(&client.Fake)
	require.Len(t, writes, 1)

	ft := &fakeT{TB: t}
	reconciletest.Object[*corev1.Secret](ft, writes[0])
	assert.True(t, ft.failed, "asking for the wrong type fails the test")
}

// fakeT records Fatalf instead of stopping the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Helper()               {}

func TestDescribeForms(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	actions := []k8stesting.Action{
		k8stesting.NewDeleteAction(corev1.SchemeGroupVersion.WithResource("configmaps"), "ns", "settings"),
		k8stesting.NewRootCreateAction(corev1.SchemeGroupVersion.WithResource("namespaces"), ns),
		k8stesting.NewListAction(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "ns", metav1.ListOptions{}),
		k8stesting.NewUpdateSubresourceAction(corev1.SchemeGroupVersion.WithResource("configmaps"), "status", "ns", cm),
	}
	assert.Equal(t, []string{
		"delete v1/configmaps ns/settings",
		"create v1/namespaces /team-a",
		"list v1/pods ns/",
		"update v1/configmaps/status ns/settings",
	}, reconciletest.Describe(actions))
}
