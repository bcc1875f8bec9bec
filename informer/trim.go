package informer

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// TrimmedAnnotation marks an object that an informer trimmed with Trim. It
// exists only in the informer's cache (and in copies of cached objects): the
// API server never sees it, as a trimmed object must never be sent back.
// Package reconcile/write turns writes of such objects into patches, and the
// fakes of reconcile/reconciletest refuse a create or update that carries it.
const TrimmedAnnotation = "ctrlkit.io/trimmed"

// trimmedMark is the annotations of every trimmed object that keeps none of
// its own. Cached objects are never modified, and copies of them copy the
// map, so one map serves them all.
var trimmedMark = map[string]string{TrimmedAnnotation: "true"}

// Trimmed reports whether obj was trimmed by an informer set up with Trim:
// it lacks what the informer did not keep, so writing it back would erase
// that.
func Trimmed(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[TrimmedAnnotation]
	return ok
}

// Trim makes inf store, of every object of type T, only the fields named
// by paths, plus its identity: name, namespace, UID, resourceVersion,
// generation, creation and deletion timestamps, finalizers and owner
// references. A path is the fields' JSON names joined by dots, as in
// "spec.replicas" or "status.availableReplicas"; through a list it keeps
// that field of every item ("spec.template.spec.containers.image"); a path
// that ends at a struct, list or map keeps all of it. A cached Deployment
// that keeps its replicas, pod labels, containers' names and images and
// three status fields takes about half the memory of one that keeps
// everything but managedFields. Trim fails on a path T does not have, or a
// T that is not a pointer to a struct. Call it before the informer
// starts; it replaces the informer's transform (such as
// StripManagedFields: a trimmed object keeps no managedFields).
//
// For the kinds of k8s.io/api, Trim also fails on a path that keeps only
// some fields of the items of a list that a strategic merge patch replaces
// whole: a list whose field's patchStrategy tag does not say merge, such
// as a pod's tolerations and readinessGates, a node selector's
// nodeSelectorTerms, or a label selector's matchExpressions. A change to
// such a list, patched from the trimmed copy, would replace the server's
// items with what the cache kept of them (an Exists toleration would come
// back as an Equal one), so the error names the list: keep all of it or
// none of it. The check is made here, for every informer, so that the
// mistake shows when the controller is set up rather than when a
// reconcile first changes the list. Lists merged item by item
// (containers by name, ports by containerPort) may be trimmed into, as may
// the lists of other types, which package reconcile/write patches with
// JSON merge patches and refuses to change a list with. A path into the
// items of a list merged by key keeps their key too (the containers' names
// with their images): a patch names each item it changes by its key.
//
// The annotation tracing.k8s.io/traceparent (the trace context of the
// write that made the object, package queue/tracing) is always kept, so
// that the reconcile a trimmed object's event sets off links to that write.
//
// A trimmed object is marked with TrimmedAnnotation and must never be
// written back whole: an update built from it would erase what was
// trimmed. Package reconcile/write sends the changes a mutate function
// makes to a trimmed object as a patch (see its package doc), and
// reconciletest.Strict fails a create or update that carries the mark, so
// tests find code that sends a cached copy another way. Server-side apply
// (write.Apply) never sends the cached object and needs nothing.
//
// The trimmed objects share the kept values they have in common: a kept
// string, or a list or pointer of strings, numbers and booleans (or of
// structs of which only such fields are kept), equal to one met recently
// is stored once, as are the namespace, the finalizers and the owners' API
// versions and kinds. Cached objects are never modified, so nothing tells
// a shared value from an own one; a copy (DeepCopy) owns all of its
// values.
//
// Objects of another type are stored as they came; tombstones
// (cache.DeletedFinalStateUnknown) are trimmed inside.
func Trim[T Object](inf interface {
	SetTransform(cache.TransformFunc) error
}, paths ...string) error {
	var zero T
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("informer: trimming %v: not a pointer to a struct", t)
	}
	root := &keptField{children: map[string]*keptField{}}
	for _, path := range paths {
		if err := root.add(t.Elem(), strings.Split(path, ".")); err != nil {
			return fmt.Errorf("informer: trimming %v to %q: %w", t, path, err)
		}
	}
	if strings.HasPrefix(t.Elem().PkgPath(), "k8s.io/api/") {
		for _, path := range paths {
			if list := root.atomicListOn(strings.Split(path, ".")); list != "" {
				return fmt.Errorf("informer: trimming %v to %q: %s is a list that a strategic merge patch replaces whole, "+
					"so a patch made from a copy that keeps only some fields of its items would erase the others: "+
					"keep the whole list (%q) or none of it", t, path, list, list)
			}
		}
	}
	root.order(new(int))
	if err := inf.SetTransform(trimWith[T](root, newSharedValues())); err != nil {
		return fmt.Errorf("informer: trimming %v: %w", t, err)
	}
	return nil
}

// keptField is a field Trim keeps: all of it, or the kept fields under it.
type keptField struct {
	index    []int // in the struct that holds it
	all      bool
	atomic   bool // a list that a strategic merge patch replaces whole
	children map[string]*keptField
	// id tells the kept fields of one Trim apart; ordered holds the
	// children in the order of their fields.
	id      int
	ordered []*keptField
}

// order numbers k and the fields under it from *next on, and orders each
// one's children.
func (k *keptField) order(next *int) {
	k.id = *next
	*next++
	k.ordered = slices.SortedFunc(maps.Values(k.children), func(a, b *keptField) int { return slices.Compare(a.index, b.index) })
	for _, child := range k.ordered {
		child.order(next)
	}
}

// add keeps the field path names in structs of type t.
func (k *keptField) add(t reflect.Type, path []string) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("%s is not a field of %v, which has no fields", path[0], t)
	}
	index, f, ok := jsonField(t, path[0])
	if !ok {
		return fmt.Errorf("%v has no field %q", t, path[0])
	}
	child := k.children[path[0]]
	if child == nil {
		child = &keptField{index: index, atomic: atomicList(f), children: map[string]*keptField{}}
		k.children[path[0]] = child
	}
	if len(path) == 1 {
		child.all = true
		return nil
	}
	if key := f.Tag.Get("patchMergeKey"); key != "" && !child.atomic {
		// A patch of some fields of an item names the item by its key.
		if err := child.add(f.Type, []string{key}); err != nil {
			return err
		}
	}
	return child.add(f.Type, path[1:])
}

// atomicList reports whether f is a list that a strategic merge patch
// replaces whole: one whose patchStrategy tag does not say merge.
func atomicList(f reflect.StructField) bool {
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Slice && !slices.Contains(strings.Split(f.Tag.Get("patchStrategy"), ","), "merge")
}

// atomicListOn returns the path of the first list on path, under k, that
// a strategic merge patch replaces whole and that k keeps only some fields
// of the items of, or "" if there is none.
func (k *keptField) atomicListOn(path []string) string {
	for i, name := range path {
		k = k.children[name]
		if k.all {
			return ""
		}
		if k.atomic {
			return strings.Join(path[:i+1], ".")
		}
	}
	return ""
}

// jsonField finds the field of struct type t whose JSON name is name,
// looking into inlined embedded structs (TypeMeta), and its index.
func jsonField(t reflect.Type, name string) ([]int, reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if index, ff, ok := jsonField(f.Type, name); ok {
				return append([]int{i}, index...), ff, true
			}
			continue
		}
		if tag == name || tag == "" && f.Name == name {
			return []int{i}, f, true
		}
	}
	return nil, reflect.StructField{}, false
}

// keep copies the kept fields of struct src into struct dst.
func (k *keptField) keep(dst, src reflect.Value, shared *sharedValues) {
	for _, child := range k.ordered {
		child.copy(dst.FieldByIndex(child.index), src.FieldByIndex(child.index), shared)
	}
}

// copy sets dst to what k keeps of src, values of k's field, sharing the
// strings, lists and pointers equal to those met before.
func (k *keptField) copy(dst, src reflect.Value, shared *sharedValues) {
	if k.all {
		dst.Set(src)
		shared.share(k, dst)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			k.copy(dst.Elem(), src.Elem(), shared)
			shared.share(k, dst)
		}
	case reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := range src.Len() {
				k.copy(dst.Index(i), src.Index(i), shared)
			}
			shared.share(k, dst)
		}
	case reflect.Struct:
		k.keep(dst, src, shared)
	}
}

// trimWith is the transform of Trim.
func trimWith[T Object](root *keptField, shared *sharedValues) cache.TransformFunc {
	var trim cache.TransformFunc
	trim = func(obj any) (any, error) {
		if d, ok := insideTombstone(obj, trim); ok {
			return d, nil
		}
		full, ok := obj.(T)
		if !ok || isNil(full) {
			return obj, nil
		}
		src := reflect.ValueOf(full)
		kept := reflect.New(src.Type().Elem())
		root.keep(kept.Elem(), src.Elem(), shared)
		trimmed := kept.Interface().(T)
		copyIdentity(trimmed, full, shared)
		return trimmed, nil
	}
	return trim
}

// copyIdentity sets what every cached object needs (to be keyed, indexed,
// told apart from other incarnations and judged fresh) from full on kept,
// and marks kept trimmed. The namespace, finalizers and owners' API
// versions and kinds are shared with other objects that have equal ones.
func copyIdentity(kept, full metav1.Object, shared *sharedValues) {
	kept.SetName(full.GetName())
	kept.SetNamespace(shared.string(full.GetNamespace()))
	kept.SetUID(full.GetUID())
	kept.SetResourceVersion(full.GetResourceVersion())
	kept.SetGeneration(full.GetGeneration())
	kept.SetCreationTimestamp(full.GetCreationTimestamp())
	kept.SetDeletionTimestamp(full.GetDeletionTimestamp())
	kept.SetFinalizers(shared.strings(full.GetFinalizers()))
	// full stays as it was given: a sharded cache (queue/shard) may still
	// read the object it passed while the transform runs.
	var refs []metav1.OwnerReference
	if from := full.GetOwnerReferences(); from != nil {
		refs = make([]metav1.OwnerReference, len(from))
		for i, ref := range from {
			ref.APIVersion, ref.Kind = shared.string(ref.APIVersion), shared.string(ref.Kind)
			refs[i] = ref
		}
	}
	kept.SetOwnerReferences(refs)
	kept.SetManagedFields(nil)
	if a := kept.GetAnnotations(); len(a) > 0 {
		a[TrimmedAnnotation] = "true"
	} else {
		kept.SetAnnotations(trimmedMark)
	}
	// The trace context of the write that made this version stays, so that
	// the reconcile its event sets off links to that write (queue/tracing).
	if tp := full.GetAnnotations()[tracing.Annotation]; tp != "" {
		a := maps.Clone(kept.GetAnnotations())
		a[tracing.Annotation] = tp
		kept.SetAnnotations(a)
	}
}
