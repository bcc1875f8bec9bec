package write_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

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

// ApplyStatus applies to the status subresource behind the same gate, and
// remembers its configuration apart from Apply's: after an apply of the
// object and one of its status, repeating either sends nothing.
func TestApplyStatus(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Apps().V1().Deployments().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	deployments := kube.AppsV1().Deployments("ns")
	name := cache.ObjectName{Namespace: "ns", Name: "web"}
	spec := appsv1ac.Deployment("web", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2))
	status := func(ready int32) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("web", "ns").WithStatus(appsv1ac.DeploymentStatus().WithReadyReplicas(ready))
	}

	created, change, err := write.Apply(ctx, objects, deployments, name, spec, "ctrl")
	require.NoError(t, err)
	require.Equal(t, write.Created, change)
	require.NoError(t, inf.GetIndexer().Add(created))

	withStatus, change, err := write.ApplyStatus(ctx, objects, deployments, name, status(1), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, int32(1), withStatus.Status.ReadyReplicas)
	assert.Equal(t, int32(2), *withStatus.Spec.Replicas, "the spec is left alone")
	_, _, err = write.ApplyStatus(ctx, objects, deployments, name, status(1), "ctrl")
	requireStale(t, err) // the cache has not seen the status apply yet

	require.NoError(t, inf.GetIndexer().Update(withStatus))
	kube.ClearActions()
	_, change, err = write.ApplyStatus(ctx, objects, deployments, name, status(1), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Empty(t, reconciletest.WriteActions(&kube.Fake), "a repeated status apply sends nothing")
	// The status apply wrote the object after the object's apply was
	// answered, so that one is sent again, and changes nothing.
	_, change, err = write.Apply(ctx, objects, deployments, name, spec, "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Len(t, reconciletest.WriteActions(&kube.Fake), 1)

	kube.ClearActions()
	changed, change, err := write.ApplyStatus(ctx, objects, deployments, name, status(2), "ctrl")
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, int32(2), changed.Status.ReadyReplicas)
	actions := reconciletest.WriteActions(&kube.Fake)
	require.Len(t, actions, 1)
	assert.Equal(t, "status", actions[0].GetSubresource())
}
