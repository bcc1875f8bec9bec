package docs

// docs/optional-apis.md: a controller of a resource another operator
// defines, a dynamic informer, an aggregated API and a fleet member,
// built as another module builds them.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// optionalFoos wires a controller of Foos, the resource of another
// operator, with the Foo CRD optional, and runs it (the page's first
// block).
func optionalFoos(ctx context.Context, kube kubernetes.Interface, crdClient apiextensionsclientset.Interface, fooClient fooclientset.Interface, reconciler reconcile.Reconciler[cache.ObjectName]) error {
	apis := optional.NewAPIs(crdClient, kube.Discovery())
	foos := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
		// A new factory each time: a stopped informer cannot run again.
		return fooinformers.NewSharedInformerFactory(fooClient, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	})
	ctrl, err := queue.New("foos", reconciler)
	if err != nil {
		return err
	}
	if err := ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])); err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithInformers(apis), operator.WithControllers(ctrl))
}

// fooReconciler reads the informer that runs now (the page's second
// block).
type fooReconciler struct {
	foos *optional.Informer[*v1alpha1.Foo]
}

func (r *fooReconciler) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	inf, served := r.foos.Current()
	if !served {
		return reconcile.Result{}, nil // keys that need the API do not run without it
	}
	foo, err := foolisters.NewFooLister(inf.GetIndexer()).Foos(key.Namespace).Get(key.Name)
	_ = foo
	return reconcile.Result{}, err
}

// dynamicWidgets is the page's dynamic informer of a resource known by
// name only, and an aggregated API followed by discovery.
func dynamicWidgets(apis *optional.APIs, dyn dynamic.Interface) (*optional.Informer[*unstructured.Unstructured], *optional.Informer[*unstructured.Unstructured]) {
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgets := optional.NewInformer(apis, widgetsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, widgetsGVR, "", 0, cache.Indexers{}, nil).Informer())
	})
	flundersGVR := schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	flunders := optional.NewInformer(apis, flundersGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, flundersGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	return widgets, flunders
}

// someKeys gates only part of a controller's keys (the page's keys
// block).
func someKeys(ctrl *queue.Controller[cache.ObjectName], foos *optional.Informer[*v1alpha1.Foo]) error {
	needsFoos := func(key cache.ObjectName) bool { return key.Namespace == "foos" }
	return ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), needsFoos))
}

// memberEngage is the engage function of the page's fleet: each member
// follows its own APIs.
func memberEngage(ctrl *queue.Controller[multicluster.Key], gate *optional.MemberGate[*v1alpha1.Foo, multicluster.Key], crdClients func(cl *multicluster.Cluster) (apiextensionsclientset.Interface, fooclientset.Interface, error)) multicluster.EngageFunc[kubernetes.Interface] {
	return func(ctx context.Context, cl *multicluster.Cluster) (kubernetes.Interface, error) {
		crdClient, fooClient, err := crdClients(cl)
		if err != nil {
			return nil, err
		}
		apis := optional.NewAPIs(crdClient, cl.Client.Discovery(), optional.WithName(cl.Name))
		foos := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
			return fooinformers.NewSharedInformerFactory(fooClient, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
		})
		foos.AddEventHandler(ctx, informer.EnqueueHandler[*v1alpha1.Foo](cl.Queue(ctrl)))
		cl.AddInformers(apis) // started, waited for and shut down with the member
		context.AfterFunc(ctx, gate.Set(cl.Name, foos))
		return cl.Client, apis.Err()
	}
}

// gateMembers gives a fleet's controller the gate of its members' Foos
// (the page's last block).
func gateMembers(ctrl *queue.Controller[multicluster.Key], use func(*optional.MemberGate[*v1alpha1.Foo, multicluster.Key])) error {
	gate := optional.NewMemberGate[*v1alpha1.Foo](func(k multicluster.Key) string { return k.Cluster }, optional.AllKeys[multicluster.Key])
	if err := ctrl.Watch(gate.Watch()); err != nil {
		return err
	}
	use(gate)
	return nil
}

// The page's wiring runs: without the CRD, the controller turns ready.
func TestOptionalAPIsPage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &fooReconciler{}
	done := make(chan error, 1)
	go func() {
		done <- optionalFoos(ctx, fake.NewClientset(), apiextensionsfake.NewClientset(), foofake.NewClientset(), r)
	}()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the operator did not stop")
	}
	apis := optional.NewAPIs(apiextensionsfake.NewClientset(), fake.NewClientset().Discovery())
	widgets, flunders := dynamicWidgets(apis, nil)
	require.NoError(t, widgets.Err())
	require.NoError(t, flunders.Err())
	_ = someKeys
	_ = memberEngage
	_ = gateMembers
}
