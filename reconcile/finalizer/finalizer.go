// Package finalizer runs a controller's cleanup before the API server
// deletes an object: a finalizer is added before the controller's first
// effect, cleanup runs once the object is being deleted, and the finalizer
// is removed only after the cleanup succeeded.
//
// Reconciler wraps a controller's two functions, Apply and Cleanup, into a
// reconcile.Reconciler of object keys (of a cluster-scoped kind, its client
// is given as ClusterScoped(kube.CoreV1().Namespaces())):
//
//	entries := write.New(factory.Core().V1().ConfigMaps().TypedInformer())
//	r := finalizer.Reconciler("example.com/entry", entries, kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
//		Apply: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
//			return reconcile.Result{}, store.Put(ctx, cm.Name, cm.Data) // the finalizer is in place
//		},
//		Cleanup: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
//			return reconcile.Result{}, store.Delete(ctx, cm.Name) // the finalizer goes once this succeeds
//		},
//	})
//
// A controller that acts on some objects of a kind only (those that opt in
// with an annotation, say) sets Funcs.InScope: only objects in scope get the
// finalizer, and one that leaves the scope is cleaned up and released like a
// deleted one. Funcs.KeepValue keeps, with the finalizer and in the same
// patch, what Cleanup will need to know once the object no longer says it
// (the external name it asked for when it opted in); Cleanup reads it with
// Kept:
//
//	r := finalizer.Reconciler("example.com/mirror", services, kube.CoreV1().Services, finalizer.Funcs[*corev1.Service]{
//		InScope:   func(svc *corev1.Service) bool { return svc.Annotations["example.com/dns-name"] != "" },
//		KeepValue: func(svc *corev1.Service) string { return svc.Annotations["example.com/dns-name"] },
//		Apply: func(ctx context.Context, svc *corev1.Service) (reconcile.Result, error) {
//			dnsName, _ := finalizer.Kept(svc, "example.com/mirror")
//			return reconcile.Result{}, dns.Put(ctx, dnsName, svc.Spec.ClusterIP)
//		},
//		Cleanup: func(ctx context.Context, svc *corev1.Service) (reconcile.Result, error) {
//			dnsName, _ := finalizer.Kept(svc, "example.com/mirror") // what was created, whatever the annotation says now
//			return reconcile.Result{}, dns.Delete(ctx, dnsName)
//		},
//	})
//
// Contains, Ensure, Keep, Kept and Remove are the single steps, for
// controllers that arrange them otherwise.
//
// # Writes
//
// Ensure and Remove send JSON patches of metadata.finalizers alone, guarded
// by tests of the object's UID and of the finalizer entries they rely on,
// not by the resourceVersion: changes of other fields do not make them
// fail. Ensure tests the whole list it read, so that it never adds a
// finalizer that is already there; Remove tests the entries it removes,
// every copy of the name, so that changes of other controllers' finalizers
// after them do not make it fail either. Both go through a write.Objects,
// which judges the API server's answers: a patch whose test no longer
// holds, because the object changed since it was read, fails with an error
// matching reconcile.ErrStaleCache while the cache has not seen the change;
// a patch refused for what it is (an invalid finalizer name, an admission
// policy) fails with the API server's error, loudly. The next reconcile
// does not act on a cache that has not yet seen the patches.
package finalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// Contains reports whether obj carries the finalizer name.
func Contains[T write.Object](obj T, name string) bool {
	return slices.Contains(obj.GetFinalizers(), name)
}

// Ensure adds the finalizer name to obj (as read from the cache, or
// returned by a write) unless it carries it, and returns the object as the
// API server has it then (obj itself when nothing was sent). An object that
// is being deleted gets no new finalizer, and neither does any object when
// name is not a valid finalizer name (a qualified name, such as
// example.com/cleanup): Ensure returns an error and sends nothing. A
// NotFound from the API server is returned, wrapped.
func Ensure[T write.Object](ctx context.Context, objects *write.Objects[T], c write.Client[T], obj T, name string) (T, error) {
	var zero T
	if err := Validate(name); err != nil {
		return zero, err
	}
	if Contains(obj, name) {
		return obj, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return zero, fmt.Errorf("finalizer %s: %s is being deleted: no finalizer can be added", name, cache.MetaObjectToName(obj))
	}
	return patch(ctx, objects, c, obj, name, append(guard(obj), addFinalizer(obj, name)...))
}

// addFinalizer returns the operations that add name to obj's finalizers,
// tested against the whole list as read: a list that changed since may
// hold the name already.
func addFinalizer(obj metav1.Object, name string) []patchOp {
	current := obj.GetFinalizers()
	if len(current) == 0 {
		return []patchOp{{op: "test", path: "/metadata/finalizers", value: nil},
			{op: "add", path: "/metadata/finalizers", value: []string{name}}}
	}
	return []patchOp{{op: "test", path: "/metadata/finalizers", value: current},
		{op: "add", path: "/metadata/finalizers/-", value: name}}
}

// Validate returns an error, naming what is wrong, when name cannot be a
// finalizer: the API server accepts only qualified names.
func Validate(name string) error {
	if errs := validation.ValidateFinalizerName(name, field.NewPath("metadata", "finalizers")); len(errs) > 0 {
		return fmt.Errorf("finalizer %q: %w", name, errs.ToAggregate())
	}
	return nil
}

// Remove removes the finalizer name from obj (as read from the cache, or
// returned by a write) if it carries it, every copy of it, and what Keep
// kept with it, in one patch, and returns the object as the API server has
// it then (obj itself when nothing was sent).
// Once an object being deleted has no finalizer left, the API server
// deletes it. An object that is gone counts as done: a NotFound is
// returned, wrapped, so callers that do not care test it with
// apierrors.IsNotFound.
func Remove[T write.Object](ctx context.Context, objects *write.Objects[T], c write.Client[T], obj T, name string) (T, error) {
	finalizers := obj.GetFinalizers()
	ops := guard(obj)
	// From the last copy to the first, so that each index still holds
	// when its operation runs; the entries before a copy may not have
	// moved, those after it may.
	for i := len(finalizers) - 1; i >= 0; i-- {
		if finalizers[i] != name {
			continue
		}
		entry := fmt.Sprintf("/metadata/finalizers/%d", i)
		ops = append(ops, patchOp{op: "test", path: entry, value: name}, patchOp{op: "remove", path: entry})
	}
	if kept, ok := Kept(obj, name); ok {
		entry := annotationPath(name)
		ops = append(ops, patchOp{op: "test", path: entry, value: kept}, patchOp{op: "remove", path: entry})
	}
	if len(ops) == len(guard(obj)) {
		return obj, nil
	}
	return patch(ctx, objects, c, obj, name, ops)
}

// Keep adds the finalizer name to obj (as read from the cache, or returned
// by a write) like Ensure, and keeps value with it, in the same patch: what
// Cleanup will need to know of the object later, when the object may no
// longer say it (the name an external resource was created under, say).
// Kept reads it back; Remove removes it with the finalizer. A later Keep
// replaces the value, guarded by a test of the value it read. It returns
// the object as the API server has it then (obj itself when nothing was
// sent), and the errors of Ensure. The value is kept in the annotation
// named like the finalizer.
func Keep[T write.Object](ctx context.Context, objects *write.Objects[T], c write.Client[T], obj T, name, value string) (T, error) {
	var zero T
	if err := Validate(name); err != nil {
		return zero, err
	}
	kept, hasKept := Kept(obj, name)
	if Contains(obj, name) && hasKept && kept == value {
		return obj, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return zero, fmt.Errorf("finalizer %s: %s is being deleted: nothing can be kept", name, cache.MetaObjectToName(obj))
	}
	ops := guard(obj)
	if !Contains(obj, name) {
		ops = append(ops, addFinalizer(obj, name)...)
	}
	switch {
	case hasKept:
		ops = append(ops, patchOp{op: "test", path: annotationPath(name), value: kept},
			patchOp{op: "replace", path: annotationPath(name), value: value})
	case obj.GetAnnotations() == nil:
		ops = append(ops, patchOp{op: "test", path: "/metadata/annotations", value: nil},
			patchOp{op: "add", path: "/metadata/annotations", value: map[string]string{name: value}})
	default:
		ops = append(ops, patchOp{op: "add", path: annotationPath(name), value: value})
	}
	return patch(ctx, objects, c, obj, name, ops)
}

// Kept returns the value Keep kept with the finalizer name on obj, and
// whether there is one.
func Kept[T write.Object](obj T, name string) (string, bool) {
	v, ok := obj.GetAnnotations()[name]
	return v, ok
}

// annotationPath is the JSON pointer (RFC 6901) of the annotation key.
func annotationPath(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	op, path string
	value    any
}

// MarshalJSON writes the operation; a test or add always has a value, so a
// test for a missing field is written with "value": null.
func (p patchOp) MarshalJSON() ([]byte, error) {
	if p.op == "remove" {
		return json.Marshal(map[string]any{"op": p.op, "path": p.path})
	}
	return json.Marshal(map[string]any{"op": p.op, "path": p.path, "value": p.value})
}

// guard returns the test of obj's UID, if it has one, that makes a patch
// apply to this incarnation of the object only.
func guard(obj metav1.Object) []patchOp {
	if obj.GetUID() == "" {
		return nil
	}
	return []patchOp{{op: "test", path: "/metadata/uid", value: obj.GetUID()}}
}

func patch[T write.Object](ctx context.Context, objects *write.Objects[T], c write.Client[T], obj T, name string, ops []patchOp) (T, error) {
	var zero T
	data, err := json.Marshal(ops)
	if err != nil {
		return zero, err
	}
	patched, err := objects.Patch(ctx, c, obj, types.JSONPatchType, data)
	if err != nil {
		return zero, fmt.Errorf("finalizer %s: %w", name, err)
	}
	return patched, nil
}

// Funcs are what a controller does with the objects it finalizes.
type Funcs[T write.Object] struct {
	// Apply brings obj to its desired state. It is called while obj is not
	// being deleted, once obj carries the finalizer; obj is the cache's
	// (or the finalizer patch's answer): read it, do not modify it. Its
	// result and error are the reconcile's.
	Apply func(ctx context.Context, obj T) (reconcile.Result, error)
	// Cleanup undoes what Apply did outside obj. It is called when obj is
	// being deleted and still carries the finalizer, again and again until
	// it returns a nil error and a zero Result (a positive RequeueAfter
	// means "in progress, look again later"); then the finalizer is
	// removed. It must treat an effect that is already gone as cleaned up.
	// It is also called for an object that carries the finalizer and left
	// the scope (see InScope), which is released the same way.
	Cleanup func(ctx context.Context, obj T) (reconcile.Result, error)
	// InScope, if set, says which objects the controller acts on: only
	// those get the finalizer and Apply, and one that carries the
	// finalizer and is no longer in scope (its opt-in annotation removed,
	// say) gets Cleanup, then loses the finalizer, as if it were deleted.
	// Objects out of scope that never had the finalizer are left alone.
	// Nil means every object.
	InScope func(obj T) bool
	// KeepValue, if set, gives what Cleanup will need to know of the
	// object later, kept with the finalizer in the same patch when the
	// finalizer is added (see Keep; Kept reads it in Cleanup). Only that
	// first value is kept: Apply calls Keep to change it, after it has
	// dealt with what the old value names.
	KeepValue func(obj T) string
}

// ClusterScoped returns what Reconciler takes as the client of a
// cluster-scoped kind, whose generated typed client is bound to no
// namespace (kube.CoreV1().Namespaces(), or a cluster-scoped custom
// resource's): a function that returns client for every namespace, as
// the keys of cluster-scoped objects have none.
func ClusterScoped[C any](client C) func(namespace string) C {
	return func(string) C { return client }
}

// Reconciler returns a reconciler of the keys of objects of type T that
// keeps the finalizer name on them and runs funcs:
//
//   - an object that is gone is done: nothing is called;
//   - an object being deleted, or out of scope (funcs.InScope), that
//     carries the finalizer gets Cleanup, and the finalizer (with what was
//     kept with it) is removed once Cleanup succeeded; without the
//     finalizer, nothing is called;
//   - any other object gets the finalizer (if it lacks it, together with
//     the value of funcs.KeepValue if it has none kept) before Apply runs, so that nothing Apply
//     does can outlive the object, or its leaving the scope, unnoticed.
//
// objects reads the objects from the cache and remembers the finalizer
// patches; client gives the typed client of a key's namespace: for a
// namespaced kind the generated clientset's method, as in
// kube.CoreV1().ConfigMaps, for a cluster-scoped kind ClusterScoped of its
// typed client, as in ClusterScoped(kube.CoreV1().Namespaces()). Both
// funcs are required, and name must be a valid finalizer name (see
// Validate): Reconciler panics otherwise, as these are the program's
// constants.
func Reconciler[T write.Object, C write.Client[T]](name string, objects *write.Objects[T], client func(namespace string) C, funcs Funcs[T]) reconcile.Reconciler[cache.ObjectName] {
	if name == "" || objects == nil || client == nil || funcs.Apply == nil || funcs.Cleanup == nil {
		panic("finalizer.Reconciler: name, objects, client, Apply and Cleanup are required")
	}
	if err := Validate(name); err != nil {
		panic("finalizer.Reconciler: " + err.Error())
	}
	return reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		obj, found, err := objects.Get(key)
		if err != nil || !found {
			return reconcile.Result{}, err
		}
		c := client(key.Namespace)
		if obj.GetDeletionTimestamp() != nil || funcs.InScope != nil && !funcs.InScope(obj) {
			if !Contains(obj, name) {
				return reconcile.Result{}, nil
			}
			res, err := funcs.Cleanup(ctx, obj)
			if err != nil || !res.IsZero() {
				return res, err
			}
			if _, err := Remove(ctx, objects, c, obj, name); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, nil
		}
		if _, kept := Kept(obj, name); funcs.KeepValue != nil && (!kept || !Contains(obj, name)) {
			obj, err = Keep(ctx, objects, c, obj, name, funcs.KeepValue(obj))
		} else {
			obj, err = Ensure(ctx, objects, c, obj, name)
		}
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // gone since the cache saw it: nothing to apply
		} else if err != nil {
			return reconcile.Result{}, err
		}
		return funcs.Apply(ctx, obj)
	})
}
