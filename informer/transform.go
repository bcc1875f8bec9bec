package informer

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// StripManagedFields is a cache.TransformFunc that removes
// metadata.managedFields from objects before an informer stores them. It is
// opt-in: pass it to SharedInformer.SetTransform before the informer starts,
// or to a generated informer factory with informers.WithTransform.
//
//	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
//		informers.WithTransform(informer.StripManagedFields))
//
// managedFields records, per field manager, which fields it set (for
// server-side apply). Controllers that read objects from a cache almost
// never need it, yet it is often the largest part of an object's metadata.
// Dropping it lowers the memory of the cache and of the copies controllers
// make from it; how much depends on the objects. BenchmarkStripManagedFields
// measures the heap retained per decoded Deployment that carries the two
// managedFields entries a controller-created Deployment typically has (the
// creating controller's and kube-controller-manager's status updates): it
// drops from about 6.1 KB to 4.2 KB, roughly 30%. Objects with more field
// managers save more, objects with large specs or annotations save a
// smaller share, and objects without managedFields save nothing. The
// transform does not reduce the traffic from the API server, only what is
// kept afterwards.
//
// Objects read from such a cache have no managedFields. Update requests
// built from them are fine: the API server keeps its record of field
// ownership when a request carries no managedFields. Code that inspects
// managedFields locally sees none.
//
// The object is modified in place, which client-go allows for transform
// functions since v1.27 (they see freshly decoded objects). A
// cache.DeletedFinalStateUnknown has the object inside it stripped; objects
// without object metadata, and nil, are returned unchanged. It never
// returns an error, so it cannot make the informer drop an object.
func StripManagedFields(obj any) (any, error) {
	if d, ok := insideTombstone(obj, StripManagedFields); ok {
		return d, nil
	}
	if isNil(obj) {
		return obj, nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata: nothing to strip.
		return obj, nil
	}
	if accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = StripManagedFields

// insideTombstone applies transform to the object inside obj, and reports
// true, if obj is a tombstone (cache.DeletedFinalStateUnknown, or a
// pointer to one); it returns obj and false otherwise. An error of
// transform leaves the tombstone's object as it was.
func insideTombstone(obj any, transform cache.TransformFunc) (any, bool) {
	switch d := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		if inner, err := transform(d.Obj); err == nil {
			d.Obj = inner
		}
		return d, true
	case *cache.DeletedFinalStateUnknown:
		if d != nil {
			if inner, err := transform(d.Obj); err == nil {
				d.Obj = inner
			}
		}
		return d, true
	}
	return obj, false
}

// isNil reports whether v is nil or a nil pointer, map, slice, channel,
// function or interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
