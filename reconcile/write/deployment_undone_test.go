package write_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A Deployment's generation moves on with its annotations, and its
// controller then records the new generation in the status: neither is a
// change of what the controller owns, so a traced update of a whole
// (untrimmed) Deployment that a webhook undoes writes the annotation once
// and then nothing, while the Deployment's controller catches up.
func TestTracedDeploymentUpdateUndoneByAWebhookSettles(t *testing.T) {
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Apps().V1().Deployments().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	ctx := reconciletest.Context(t)
	client := kube.AppsV1().Deployments("ns")
	d, err := client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptrInt32(1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1"}}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Update(d))
	// A mutating webhook pins the replicas to 1.
	kube.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" {
			a.(k8stesting.UpdateAction).GetObject().(*appsv1.Deployment).Spec.Replicas = ptrInt32(1)
		}
		return false, nil, nil
	})
	server := func() *appsv1.Deployment {
		d, err := client.Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return d
	}
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	writes := 0
	for i := range 4 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := server().ResourceVersion
		_, change, err := objects.Ensure(rctx, client, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, nginx(2, "nginx:1"))
		span.End()
		require.NoError(t, err)
		assert.Equal(t, write.Unchanged, change, "reconcile %d: the webhook undid the change", i+1)
		if server().ResourceVersion != before {
			writes++
		}
		require.NoError(t, inf.GetIndexer().Update(server()))
		// The Deployment's controller records the generation.
		if d := server(); d.Status.ObservedGeneration != d.Generation {
			d.Status.ObservedGeneration = d.Generation
			d, err = client.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.NoError(t, inf.GetIndexer().Update(d))
		}
	}
	assert.Equal(t, 1, writes, "traced reconciles of a Deployment whose change a webhook undoes wrote it %d times (annotation %q)",
		writes, server().Annotations[tracing.Annotation])
}
