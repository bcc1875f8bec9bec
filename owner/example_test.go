package owner_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
)

// A Foo controller watches the Deployments it creates and reconciles the
// Foo that controls each one. In a real controller the handler goes to the
// controller's Watch with queue.On (or to the typed Deployment informer's
// AddTypedEventHandler) and the queue is the controller; here the
// informer's calls are made by hand.
func ExampleEnqueueOwner() {
	fooKind := schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}
	enqueue := informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Println("enqueue", key) })
	handler := owner.EnqueueOwner[*appsv1.Deployment](fooKind, enqueue)

	controlledBy := func(foo string) []metav1.OwnerReference {
		return []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: foo, UID: types.UID("uid-" + foo)},
			schema.GroupVersionKind{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Kind: "Foo"},
		)}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web", OwnerReferences: controlledBy("foo-a"),
	}}
	handler.OnAdd(d, true)

	// Re-parented from foo-a to foo-b: both Foos are told.
	moved := d.DeepCopy()
	moved.OwnerReferences = controlledBy("foo-b")
	handler.OnUpdate(d, moved)

	// A delete the informer noticed only on a relist carries the last
	// state it knew, whose owner is told.
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		OptionalObj:       moved,
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "default/web", Obj: moved},
	})

	// Output:
	// enqueue default/foo-a
	// enqueue default/foo-b
	// enqueue default/foo-a
	// enqueue default/foo-b
}

// Objects controlled by a cluster-scoped kind (here Pods controlled by a
// hypothetical cluster-scoped PodPool) enqueue their owner without a
// namespace.
func ExampleEnqueueClusterOwner() {
	poolKind := schema.GroupKind{Group: "pools.example.com", Kind: "PodPool"}
	enqueue := informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Printf("enqueue %q\n", key) })
	handler := owner.EnqueueClusterOwner[*corev1.Pod](poolKind, enqueue)

	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "worker-1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: "big", UID: "uid-big"},
			schema.GroupVersionKind{Group: "pools.example.com", Version: "v1", Kind: "PodPool"},
		)},
	}}
	handler.OnAdd(p, false)

	// Output:
	// enqueue "big"
}

// Before changing a Deployment, a reconciler checks that its Foo controls
// it.
func ExampleCheck() {
	foo := &metav1.ObjectMeta{Namespace: "default", Name: "foo-a", UID: "uid-a"}
	gvk := schema.GroupVersionKind{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Kind: "Foo"}

	mine := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "mine", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(foo, gvk)},
	}}
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "theirs", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: "foo-b", UID: "uid-b"}, gvk)},
	}}
	loose := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "loose"}}

	for _, d := range []*appsv1.Deployment{mine, theirs, loose} {
		fmt.Println(d.Name, owner.Check(d, foo))
	}

	// Output:
	// mine Controlled
	// theirs Foreign
	// loose Orphan
}
