// Package owner finds and checks the controlling owner of Kubernetes
// objects: an event handler that enqueues the owner of a changed object,
// and ownership checks for reconcilers that create objects on behalf of an
// owner.
//
// A controller that manages Deployments for its Foo resources watches
// Deployments and reconciles the Foo that controls each one:
//
//	fooKind := schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}
//	err := ctrl.Watch(queue.On(deployments.TypedInformer(), owner.EnqueueOwner[*appsv1.Deployment](fooKind, ctrl)))
//
// and, inside the reconcile, refuses to touch a Deployment that another
// controller owns:
//
//	switch owner.Check(deployment, foo) {
//	case owner.Foreign:
//		return fmt.Errorf("deployment %s is not controlled by foo %s", deployment.Name, foo.Name)
//	case owner.Orphan:
//		// adopt it, or refuse, as the controller's contract says
//	}
//
// Lookups use the controller reference only (the owner reference with
// controller: true, as returned by metav1.GetControllerOf); other owner
// references are ignored.
package owner

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Relation is how an object relates to a would-be owner, as reported by
// Check.
type Relation int

const (
	// Orphan means the object has no controller. An owner may adopt it
	// by adding its controller reference; controllers usually adopt only
	// objects that match their selector and that are not being deleted.
	Orphan Relation = iota
	// Controlled means the object's controller reference carries the
	// owner's UID: the owner controls it and may change or delete it.
	Controlled
	// Foreign means the object is controlled by something else (another
	// object, or an earlier incarnation of the owner with the same name
	// but another UID). The owner must leave it alone.
	Foreign
)

// String returns "Orphan", "Controlled" or "Foreign".
func (o Relation) String() string {
	switch o {
	case Orphan:
		return "Orphan"
	case Controlled:
		return "Controlled"
	case Foreign:
		return "Foreign"
	}
	return fmt.Sprintf("Relation(%d)", int(o))
}

// Check reports how obj relates to owner: Controlled when obj's controller
// reference has owner's UID (metav1.IsControlledBy), Foreign when obj has
// another controller, Orphan when it has none. Only UIDs are compared, so a
// reference to a deleted and re-created owner of the same name is Foreign.
func Check(obj, owner metav1.Object) Relation {
	switch {
	case metav1.IsControlledBy(obj, owner):
		return Controlled
	case metav1.GetControllerOfNoCopy(obj) == nil:
		return Orphan
	default:
		return Foreign
	}
}

// ControllerOfKind returns a copy of obj's controller reference
// (metav1.GetControllerOf) if the controller has the group and kind of gk.
// The group is taken from the reference's apiVersion with
// schema.ParseGroupVersion, so every version of the owner's API matches;
// the core group is "". A reference whose apiVersion cannot be parsed or
// whose name is empty does not match.
func ControllerOfKind(obj metav1.Object, gk schema.GroupKind) (metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != gk.Kind || ref.Name == "" {
		return metav1.OwnerReference{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != gk.Group {
		return metav1.OwnerReference{}, false
	}
	return *ref, true
}

// EnqueueOwner returns a handler for an informer of T that passes the key of
// the controlling owner of each object to q, for owners of the group and
// kind gk (see ControllerOfKind) that live in the namespace of the objects
// they control. EnqueueClusterOwner is the same for cluster-scoped owners.
//
//   - On add and delete, the object's controller is enqueued. A delete is
//     mapped from the last state the informer knew, so a delete the
//     informer missed still reaches the owner.
//   - On update, the new object's controller is enqueued, and the old
//     object's too if it differs: when an object is re-parented, released
//     or adopted, every owner involved is told; when the controller stayed
//     the same it is enqueued once.
//   - Owners of objects that did not change (adds of the informer's initial
//     list, resyncs with an unchanged resourceVersion) go to
//     q.AddLowPriority, the others to q.Add, as for
//     informer.EnqueueMappedHandler.
//
// The key's name is the owner reference's name and its namespace the
// object's. A namespaced owner cannot control a cluster-scoped object, so
// such objects enqueue nothing. Predicates given with opts judge the owned
// object, not the owner.
func EnqueueOwner[T informer.Object](gk schema.GroupKind, q informer.Queue[cache.ObjectName], opts ...informer.Option) cache.TypedResourceEventHandler[T] {
	return informer.EnqueueMappedHandler(func(obj T) []cache.ObjectName {
		if k, ok := controllerKey(obj, gk, false); ok {
			return []cache.ObjectName{k}
		}
		return nil
	}, q, append([]informer.Option{informer.WithSource(tracing.SourceOwner)}, opts...)...)
}

// EnqueueClusterOwner is EnqueueOwner for a cluster-scoped owner kind: keys
// are enqueued without a namespace, for owned objects of any scope.
func EnqueueClusterOwner[T informer.Object](gk schema.GroupKind, q informer.Queue[cache.ObjectName], opts ...informer.Option) cache.TypedResourceEventHandler[T] {
	return informer.EnqueueMappedHandler(func(obj T) []cache.ObjectName {
		if k, ok := controllerKey(obj, gk, true); ok {
			return []cache.ObjectName{k}
		}
		return nil
	}, q, append([]informer.Option{informer.WithSource(tracing.SourceOwner)}, opts...)...)
}

func controllerKey(obj metav1.Object, gk schema.GroupKind, clusterScoped bool) (cache.ObjectName, bool) {
	ref, ok := ControllerOfKind(obj, gk)
	if !ok {
		return cache.ObjectName{}, false
	}
	if clusterScoped {
		return cache.ObjectName{Name: ref.Name}, true
	}
	ns := obj.GetNamespace()
	if ns == "" {
		return cache.ObjectName{}, false
	}
	return cache.ObjectName{Namespace: ns, Name: ref.Name}, true
}

// ControllerUID files an object under the UID of its controller (none for an
// object without one): the index function of informer.NewIndex that finds
// the objects an owner controls without scanning the cache.
//
//	index, err := informer.NewIndex(deployments.TypedInformer(), "controller-uid", owner.ControllerUID[*appsv1.Deployment])
func ControllerUID[T metav1.Object](obj T) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}
