package reconciletest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// scaleClient is what the typed clients of the kinds with a scale
// subresource have in common.
type scaleClient[T any, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error)
}

// scaleCase is a test of a kind's scale subresource through its client c:
// it creates obj (named web, 2 replicas, selector app=web); replicas reads
// an object's spec.replicas and generation, items a list's length.
func scaleCase[T any, L any](c scaleClient[T, L], obj T, replicas func(T) (int32, int64), items func(L) int) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := t.Context()
		get := func() (int32, int64) {
			o, err := c.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err, "the object after a write to its scale")
			return replicas(o)
		}
		_, err := c.Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
		_, generation := get()

		scale, err := c.GetScale(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "web", scale.Name)
		assert.Equal(t, int32(2), scale.Spec.Replicas)
		assert.Equal(t, "app=web", scale.Status.Selector)
		stale := scale.DeepCopy()

		scale.Spec.Replicas = 5
		got, err := c.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(5), got.Spec.Replicas, "the answer is the new Scale")
		assert.NotEqual(t, stale.ResourceVersion, got.ResourceVersion, "a new resourceVersion")
		n, newGeneration := get()
		assert.Equal(t, int32(5), n)
		assert.Equal(t, generation+1, newGeneration, "a change of spec.replicas is a new generation")
		list, err := c.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, items(list), "the object is listed as its kind after a write to its scale")

		stale.Spec.Replicas = 1
		_, err = c.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsConflict(err), "a stale resourceVersion: %v", err)
		n, _ = get()
		assert.Equal(t, int32(5), n, "a refused scale write changes nothing")
	}
}

// Strict serves the scale subresource of the built-in kinds that have one
// as an API server does: a get answers an autoscaling/v1 Scale of the
// object's replicas and selector; an update sets spec.replicas (a new
// generation), answers the new Scale, refuses a stale resourceVersion,
// and leaves the object readable and listed as its kind.
func TestStrictServesScale(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	meta := metav1.ObjectMeta{Name: "web", Namespace: "ns"}
	strict := func() *kubefake.Clientset {
		kube := kubefake.NewClientset()
		reconciletest.Strict(kube)
		return kube
	}
	t.Run("Deployment", scaleCase(strict().AppsV1().Deployments("ns"),
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: selector}},
		func(o *appsv1.Deployment) (int32, int64) { return *o.Spec.Replicas, o.Generation },
		func(l *appsv1.DeploymentList) int { return len(l.Items) }))
	t.Run("ReplicaSet", scaleCase(strict().AppsV1().ReplicaSets("ns"),
		&appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: selector}},
		func(o *appsv1.ReplicaSet) (int32, int64) { return *o.Spec.Replicas, o.Generation },
		func(l *appsv1.ReplicaSetList) int { return len(l.Items) }))
	t.Run("StatefulSet", scaleCase(strict().AppsV1().StatefulSets("ns"),
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: selector}},
		func(o *appsv1.StatefulSet) (int32, int64) { return *o.Spec.Replicas, o.Generation },
		func(l *appsv1.StatefulSetList) int { return len(l.Items) }))
	t.Run("ReplicationController", scaleCase(strict().CoreV1().ReplicationControllers("ns"),
		&corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "web"}}},
		func(o *corev1.ReplicationController) (int32, int64) { return *o.Spec.Replicas, o.Generation },
		func(l *corev1.ReplicationControllerList) int { return len(l.Items) }))
}
