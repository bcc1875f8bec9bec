package write_test

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// newReconciler keeps a Deployment of two replicas for each key.
func newReconciler(kube kubernetes.Interface, factory informers.SharedInformerFactory) reconcile.Reconciler[cache.ObjectName] {
	deployments := write.New(factory.Apps().V1().Deployments().TypedInformer())
	r := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		// Create the Deployment, or correct what this controller owns in it.
		want := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		_, _, err := deployments.Ensure(ctx, kube.AppsV1().Deployments(key.Namespace), want, func(d *appsv1.Deployment) error {
			d.Spec.Replicas = ptr.To[int32](2)
			return nil
		})
		return reconcile.Result{}, err // a stale cache is requeued quietly
	})
	return r
}

func Example() {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	r := newReconciler(kube, factory)
	_ = r // run it with a queue.Controller watching the Deployments
}
