package write_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A controller takes its finalizer off an object being deleted with
// Update (or Ensure), the usual end of a finalizer: the API server deletes
// the object and answers, as kube-apiserver does, with its last state at
// the version it had (see TestWriteThatDeletes). The write deleted the
// object: it is Updated, not Unchanged, and not remembered as settled.
func TestUpdateThatTakesTheLastFinalizerOffIsNotUnchanged(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	_, err := e.client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Finalizers: []string{"x.io/f"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.client().Delete(ctx, key.Name, metav1.DeleteOptions{}))
	cm := e.server(t)
	require.NotNil(t, cm.DeletionTimestamp)
	e.deliver(t, cm)
	answer := cm.DeepCopy()
	answer.Finalizers = nil
	e.kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, answer, nil // deleted; the last state at the same version
	})

	got, change, err := e.objects.Update(ctx, e.client(), cm, func(cm *corev1.ConfigMap) error {
		cm.Finalizers = nil
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, got.Finalizers)
	assert.NotEqual(t, write.Unchanged, change, "the update took the last finalizer off and deleted the object")
}
