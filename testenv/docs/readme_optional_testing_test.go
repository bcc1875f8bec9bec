package docs

// docs/optional-apis.md: the Flags paragraph, reading a dynamic Informer
// and the Testing section.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// flagsFoos wires the optional Foos on operator.Flags (the page's Flags
// paragraph).
func flagsFoos(ctx context.Context, flags *operator.Flags, kube kubernetes.Interface, crdClient apiextensionsclientset.Interface, fooClient fooclientset.Interface, reconciler reconcile.Reconciler[cache.ObjectName]) error {
	var foos *optional.Informer[*v1alpha1.Foo]
	operator.Informers(flags, func(transform cache.TransformFunc) *optional.APIs {
		apis := optional.NewAPIs(crdClient, kube.Discovery())
		foos = optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
			return fooinformers.NewSharedInformerFactoryWithOptions(fooClient, 0, fooinformers.WithTransform(transform)).Samplecontroller().V1alpha1().Foos().TypedInformer()
		})
		return apis
	})
	ctrl, err := queue.New("foos", reconciler, flags.ControllerOptions()...)
	if err != nil {
		return err
	}
	if err := ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])); err != nil {
		return err
	}
	return operator.Run(ctx, append(flags.Options(kube), operator.WithControllers(ctrl))...)
}

// readWidget reads an object of a dynamic Informer (the page's dynamic
// block).
func readWidget(widgets *optional.Informer[*unstructured.Unstructured], key cache.ObjectName) (runtime.Object, bool, error) {
	inf, served := widgets.Current()
	if !served {
		return nil, false, nil
	}
	widget, err := dynamiclister.New(inf.GetIndexer(), widgets.Resource()).Namespace(key.Namespace).Get(key.Name)
	return widget, true, err
}

// establishedWidgets is the CRD of widgets as the API server reports it
// once it serves them (the page's Testing section).
func establishedWidgets() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true},
			},
		},
		// The fake clientset sets no condition: a test sets Established.
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			},
		},
	}
}

// The Testing section's steps run: the CRD installed, the informer runs;
// deleted, it stops.
func TestOptionalAPIsTesting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crds := apiextensionsfake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"})
	apis := optional.NewAPIs(crds, nil)
	widgets := optional.NewInformer(apis, widgetsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, widgetsGVR, "", 0, cache.Indexers{}, nil).Informer())
	})
	require.NoError(t, widgets.Err())
	apis.StartWithContext(ctx)
	defer func() {
		cancel()
		apis.Shutdown()
	}()

	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, establishedWidgets(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, 30*time.Second, 10*time.Millisecond)

	_, served, err := readWidget(widgets, cache.ObjectName{Namespace: "default", Name: "absent"})
	require.True(t, served)
	require.Error(t, err)

	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return widgets.State() == optional.Stopped }, 30*time.Second, 10*time.Millisecond)
	_ = flagsFoos
}
