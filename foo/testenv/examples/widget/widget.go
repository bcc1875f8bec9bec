// Package widget is a small operator outside the ctrlkit module: for every
// Widget (example.com/v1) it keeps a ConfigMap of the same name holding the
// Widget's spec.message, owned by the Widget, and records the generation it
// acted on in status.observedGeneration.
//
// It exists to show how another module tests an operator against a real
// control plane with github.com/ctrlkit/ctrlkit/foo/testenv; see
// widget_test.go.
package widget

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Resource is the Widget resource; Kind its kind.
var (
	Resource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	Kind     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

// ErrForeignConfigMap is returned (as a terminal error) for a Widget whose
// ConfigMap name is taken by an object the Widget does not control.
var ErrForeignConfigMap = errors.New("a ConfigMap of that name exists and is not controlled by the Widget")

// NewController returns the widget controller. widgets is the informer of
// Resource of a dynamic informer factory, typed by Informer; the
// caller starts the informers and runs the controller.
func NewController(kube kubernetes.Interface, dyn dynamic.Interface, widgets cache.TypedSharedIndexInformer[*unstructured.Unstructured],
	configMaps coreinformers.TypedConfigMapInformer, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	r := &reconciler{kube: kube, dyn: dyn, widgets: widgets.GetIndexer(), configMaps: configMaps}
	ctrl, err := queue.New("widget", reconcile.Func[cache.ObjectName](r.reconcile), opts...)
	if err != nil {
		return nil, err
	}
	if err := ctrl.Watch(queue.On(widgets, informer.EnqueueHandler[*unstructured.Unstructured](ctrl)),
		queue.On(configMaps.TypedInformer(), owner.EnqueueOwner[*corev1.ConfigMap](Kind.GroupKind(), ctrl))); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// Informer returns the informer of Resource of a dynamic informer
// factory, typed for NewController: its objects are
// *unstructured.Unstructured.
func Informer(factory dynamicinformer.DynamicSharedInformerFactory) cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
	return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](factory.ForResource(Resource).Informer())
}

type reconciler struct {
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	widgets    cache.Indexer
	configMaps coreinformers.TypedConfigMapInformer
}

func (r *reconciler) reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	obj, exists, err := r.widgets.GetByKey(key.String())
	if err != nil || !exists {
		return reconcile.Result{}, err // a deleted Widget's ConfigMap goes with it (owner reference)
	}
	w := obj.(*unstructured.Unstructured)
	message, _, _ := unstructured.NestedString(w.Object, "spec", "message")
	want := map[string]string{"message": message}

	cm, err := r.configMaps.Lister().ConfigMaps(key.Namespace).Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:            key.Name,
				Namespace:       key.Namespace,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w, Kind)},
			},
			Data: want,
		}
		if _, err := r.kube.CoreV1().ConfigMaps(key.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating ConfigMap: %w", err)
		}
	case err != nil:
		return reconcile.Result{}, err
	case owner.Check(cm, w) != owner.Controlled:
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("%s: %w", key, ErrForeignConfigMap))
	case !maps.Equal(cm.Data, want):
		cm = cm.DeepCopy()
		cm.Data = want
		if _, err := r.kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, fmt.Errorf("updating ConfigMap: %w", err)
		}
	}

	observed, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	if observed == w.GetGeneration() {
		return reconcile.Result{}, nil
	}
	w = w.DeepCopy()
	if err := unstructured.SetNestedField(w.Object, w.GetGeneration(), "status", "observedGeneration"); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := r.dyn.Resource(Resource).Namespace(key.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating status: %w", err)
	}
	return reconcile.Result{}, nil
}
