package write_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

func TestApply(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	cfg := func(mode string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(key.Name, key.Namespace).WithData(map[string]string{"mode": mode})
	}

	created, change, err := write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("a"), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Created, change)
	assert.Equal(t, "a", created.Data["mode"])
	_, _, err = write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("a"), "ctrl")
	requireStale(t, err) // the cache has not seen the apply yet

	// Once the cache shows what the apply answered, the same apply is skipped.
	e.deliver(t, created)
	e.kube.ClearActions()
	got, change, err := write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("a"), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Same(t, created, got)
	assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake), "a repeated apply sends nothing")

	// Another configuration is sent.
	updated, change, err := write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("b"), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, "b", updated.Data["mode"])
	e.deliver(t, updated)

	// Someone else writes the object: the same configuration is sent again.
	other := updated.DeepCopy()
	other.Labels = map[string]string{"team": "x"}
	other, err = e.client().Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.deliver(t, other)
	e.kube.ClearActions()
	_, _, err = write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("b"), "ctrl")
	require.NoError(t, err)
	assert.Len(t, reconciletest.WriteActions(&e.kube.Fake), 1, "re-applied after a foreign write")

	// Forget drops what was applied: the next apply is sent.
	e.objects.Forget(key)
	e.kube.ClearActions()
	_, _, err = write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, cfg("b"), "ctrl")
	require.NoError(t, err)
	assert.Len(t, reconciletest.WriteActions(&e.kube.Fake), 1)
}
