package reconciletest

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scaleOf is the autoscaling/v1 Scale the API server answers for obj's
// scale subresource, and whether obj is a built-in kind that has one.
func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, bool) {
	var spec *int32
	var status int32
	var selector string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, formatSelector(o.Spec.Selector)
	case *appsv1.ReplicaSet:
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, formatSelector(o.Spec.Selector)
	case *appsv1.StatefulSet:
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, formatSelector(o.Spec.Selector)
	case *corev1.ReplicationController:
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, labels.SelectorFromSet(o.Spec.Selector).String()
	default:
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	replicas := int32(1) // the API server's default for all four
	if spec != nil {
		replicas = *spec
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}, true
}

// formatSelector is s as a Scale's status.selector writes it.
func formatSelector(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return ""
	}
	return sel.String()
}

// withReplicas returns a copy of obj, a kind scaleOf knows, with
// spec.replicas set to n.
func withReplicas(obj runtime.Object, n int32) runtime.Object {
	obj = obj.DeepCopyObject()
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	case *corev1.ReplicationController:
		o.Spec.Replicas = &n
	}
	return obj
}

// getScale answers a get of the scale subresource of the object name, and
// whether Strict serves it: for the built-in kinds that have one.
func (t *strictTracker) getScale(gvr schema.GroupVersionResource, ns, name string) (bool, runtime.Object, error) {
	stored, err := t.base.Get(gvr, ns, name)
	if err != nil {
		return true, nil, err
	}
	scale, ok := scaleOf(stored)
	if !ok {
		return false, nil, nil
	}
	return true, scale, nil
}

// updateScale answers an update of the scale subresource with req, and
// whether Strict serves it: for the built-in kinds that have one, it sets
// the object's spec.replicas as an update of the object would (a
// resourceVersion in req must be the stored one) and answers the new
// Scale.
func (t *strictTracker) updateScale(gvr schema.GroupVersionResource, ns string, req runtime.Object, fieldManager string) (bool, runtime.Object, error) {
	scale, ok := req.(*autoscalingv1.Scale)
	if !ok {
		return false, nil, nil
	}
	stored, err := t.base.Get(gvr, ns, scale.Name)
	if err != nil {
		return true, nil, err
	}
	if _, ok := scaleOf(stored); !ok {
		return false, nil, nil
	}
	sm, err := meta.Accessor(stored)
	if err != nil {
		return true, nil, err
	}
	if err := staleVersion(gvr, scale.Name, scale.ResourceVersion, sm); err != nil {
		return true, nil, err
	}
	updated, err := t.update(false, gvr, withReplicas(stored, scale.Spec.Replicas), ns, "", fieldManager)
	if err != nil {
		return true, nil, err
	}
	answer, _ := scaleOf(updated)
	return true, answer, nil
}
