package reconciletest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

func TestStrictVersions(t *testing.T) {
	ctx := context.Background()
	kube, other := kubefake.NewClientset(), kubefake.NewClientset()
	reconciletest.StrictVersions(kube, other)
	cms := kube.CoreV1().ConfigMaps("ns")

	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "1"}}
	created, err := cms.Create(ctx, mine, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1001", created.ResourceVersion)
	assert.Empty(t, mine.ResourceVersion, "the caller's object is not changed")
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1001", got.ResourceVersion)

	// An update from the current version succeeds and bumps it.
	got.Data["k"] = "2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1002", updated.ResourceVersion)

	// The stale copy conflicts, as it would on an API server.
	got.Data["k"] = "3"
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale update: %v", err)

	// Without a version the update is unconditional.
	got.ResourceVersion = ""
	updated, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1003", updated.ResourceVersion)

	// Patches: with a stale version in the patch they conflict, without
	// one they apply.
	_, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1001"},"data":{"k":"4"}}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsConflict(err), "stale patch: %v", err)
	patched, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"5"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1004", patched.ResourceVersion)
	assert.Equal(t, "5", patched.Data["k"])

	// A create that carries a version is refused.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "7"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsBadRequest(err), "create with a version: %v", err)

	// Versions increase across the clientsets given together.
	d, err := other.AppsV1().Deployments("ns").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1005", d.ResourceVersion)

	// Status updates are checked like updates.
	d.Status.Replicas = 1
	d, err = other.AppsV1().Deployments("ns").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	d.ResourceVersion = "1005"
	_, err = other.AppsV1().Deployments("ns").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale status update: %v", err)

	// Informers see the versions.
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	lister := factory.Core().V1().ConfigMaps().Lister()
	reconciletest.StartInformers(t, factory)
	cached, err := lister.ConfigMaps("ns").Get("a")
	require.NoError(t, err)
	assert.Equal(t, "1004", cached.ResourceVersion)
	fresh := cached.DeepCopy()
	fresh.Data["k"] = "6"
	_, err = cms.Update(ctx, fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := lister.ConfigMaps("ns").Get("a")
		return err == nil && c.ResourceVersion == "1007"
	}, 10*time.Second, time.Millisecond, "the watch delivers the new version")
	_, err = cms.Update(ctx, cached, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "an update from the old cached copy conflicts")
}

func TestStrictVersionsApply(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	reconciletest.StrictVersions(kube)
	cms := kube.CoreV1().ConfigMaps("ns")
	applied, err := cms.Apply(ctx, corev1apply.ConfigMap("a", "ns").WithData(map[string]string{"k": "1"}), metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, "1001", applied.ResourceVersion)
	applied, err = cms.Apply(ctx, corev1apply.ConfigMap("a", "ns").WithData(map[string]string{"k": "2"}), metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, "1002", applied.ResourceVersion)
	assert.Equal(t, "2", applied.Data["k"])
}
