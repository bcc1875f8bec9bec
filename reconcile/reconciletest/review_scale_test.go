package reconciletest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// A write to a Deployment's scale subresource (UpdateScale, which an HPA
// or a controller that scales does) sends an autoscaling/v1 Scale: it
// says nothing of the kind of the deployments resource's objects.
// Strict learns the resource's kind from every update's body, though, so
// it takes the deployments' kind to be Scale and from then on keeps them
// under the resource it guesses from that kind, "scales": the Deployment
// that was there is not found any more. What should happen: the scale
// write does not change what Strict knows of the resource's kind (learn
// only from a body of the main resource or of status), and the
// Deployment stays readable after it, as on an API server.
func TestReviewStrictScaleUpdateKeepsDeployments(t *testing.T) {
	ctx := t.Context()
	kube := kubefake.NewClientset()
	reconciletest.Strict(kube)
	_, err := kube.AppsV1().Deployments("ns").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Whatever the scale write answers, the deployment must stay.
	_, _ = kube.AppsV1().Deployments("ns").UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{})
	_, err = kube.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err, "the Deployment after a write to its scale subresource")
	list, err := kube.AppsV1().Deployments("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "the deployments listed after a write to the scale subresource")
}
