package owner_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
)

// watchDeployments and refuseForeign are the package documentation's
// examples; ExampleEnqueueOwner and ExampleCheck run the same calls.
func watchDeployments(ctrl *queue.Controller[cache.ObjectName], deployments appsinformers.TypedDeploymentInformer) error {
	fooKind := schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}
	err := ctrl.Watch(queue.On(deployments.TypedInformer(), owner.EnqueueOwner[*appsv1.Deployment](fooKind, ctrl)))
	return err
}

func refuseForeign(deployment *appsv1.Deployment, foo *samplev1alpha1.Foo) error {
	switch owner.Check(deployment, foo) {
	case owner.Foreign:
		return fmt.Errorf("deployment %s is not controlled by foo %s", deployment.Name, foo.Name)
	case owner.Orphan:
		// adopt it, or refuse, as the controller's contract says
	}
	return nil
}

var _, _ = watchDeployments, refuseForeign

// indexByController is ControllerUID's documentation example.
func indexByController(deployments appsinformers.TypedDeploymentInformer) (*informer.Index[*appsv1.Deployment], error) {
	index, err := informer.NewIndex(deployments.TypedInformer(), "controller-uid", owner.ControllerUID[*appsv1.Deployment])
	return index, err
}

var _ = indexByController
