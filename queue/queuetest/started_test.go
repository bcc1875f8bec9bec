package queuetest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Start returns only once the controller's Run is under way: its handlers
// have delivered the initial lists, so a key of an object that existed
// before is queued, running or done when Start returns, however the
// controller's watches are made, and a test may end right after Start.
func TestStartReturnsOnceRunIsUnderWay(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	tests := []struct {
		name     string
		optional bool // an optional watch of widgets, gating no key, beside the ConfigMap watch
	}{
		{name: "a ConfigMap watch"},
		{name: "a ConfigMap watch and an optional watch", optional: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "existing"}})
			factory := informers.NewSharedInformerFactory(kube, 0)
			var done atomic.Int64
			ctrl, err := queue.New("started", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
				done.Add(1)
				return reconcile.Result{}, nil
			}))
			require.NoError(t, err)
			require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
			opts := []operator.Option{operator.WithInformers(factory)}
			if tt.optional {
				dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"})
				apis := optional.NewAPIs(apiextensionsfake.NewClientset(), nil)
				inf := optional.NewInformer(apis, widgets, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
					return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](dynamicinformer.NewFilteredDynamicInformer(dyn, widgets, "", 0, cache.Indexers{}, nil).Informer())
				})
				require.NoError(t, ctrl.Watch(optional.On(inf, informer.EnqueueHandler[*unstructured.Unstructured](ctrl), (func(cache.ObjectName) bool)(nil))))
				opts = append(opts, operator.WithInformers(apis))
			}

			queuetest.Start(t, ctrl, opts...)

			// Read in the order a key moves: waiting, running, done.
			waiting, running, reconciled := ctrl.Len(), ctrl.Active(), done.Load()
			require.Positive(t, int64(waiting+running)+reconciled,
				"Start returned before the controller's handlers delivered the ConfigMap that existed before")
		})
	}
}
