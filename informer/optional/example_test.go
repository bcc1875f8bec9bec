package optional_test

import (
	"context"
	"fmt"

	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runWidgets is the package documentation's operator: a controller of
// Widgets, a resource that may not be installed, read through a dynamic
// informer.
func runWidgets(ctx context.Context, kubeClient kubernetes.Interface, crdClient apiextensionsclientset.Interface, dyn dynamic.Interface, ctrl *queue.Controller[cache.ObjectName]) error {
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	apis := optional.NewAPIs(crdClient, kubeClient.Discovery())
	widgets := optional.NewInformer(apis, widgetsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, widgetsGVR, "", 0, nil, nil).Informer())
	})
	if err := ctrl.Watch(optional.On(widgets, informer.EnqueueHandler[*unstructured.Unstructured](ctrl), optional.AllKeys[cache.ObjectName])); err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithInformers(apis), operator.WithControllers(ctrl))
}

// A controller of a resource that is not installed runs, and stops, as
// any other.
func ExampleOn() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl, err := queue.New("widgets", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Group: "example.com", Version: "v1", Resource: "widgets"}: "WidgetList"})
	done := make(chan error, 1)
	go func() { done <- runWidgets(ctx, fake.NewClientset(), apiextensionsfake.NewClientset(), dyn, ctrl) }()
	cancel()
	fmt.Println("stopped:", <-done)
	// Output: stopped: <nil>
}
