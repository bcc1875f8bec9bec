package write

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// ErrTrimmed is wrapped by the error of a write that cannot be made from an
// object its informer trimmed (informer.Trim), as it would erase what was
// trimmed or be lost: an update of its status subresource, a change to its
// status through Ensure or Update (a patch of the object does not write
// the status of a kind that has a status subresource), or a change to a
// list of a custom resource (a merge patch replaces lists whole). Such a
// write sends nothing.
var ErrTrimmed = errors.New("the object was trimmed by its informer")

// trimmedPatch returns the patch that makes on the API server the change
// from current, a trimmed object, to obj, what mutate made of a copy of it:
// a strategic merge patch for the kinds of k8s.io/api, which merges lists
// of named items (containers, ports, volumes) item by item, and a JSON
// merge patch for the others. Fields the informer did not keep are in
// neither object, so the patch leaves them as the server has them; a list
// the patch replaces whole was kept whole or not at all, as informer.Trim
// refuses to keep only some fields of the items of such a list of a
// k8s.io/api kind. A change to the status, or to a list of another kind,
// is an error wrapping ErrTrimmed. The patch carries current's
// resourceVersion: the server refuses it with a conflict if the object
// changed since.
func trimmedPatch[T Object](name cache.ObjectName, current, obj T) (types.PatchType, []byte, error) {
	before, err := json.Marshal(unmarked(current))
	if err != nil {
		return "", nil, fmt.Errorf("write: %s: encoding the cached object: %w", name, err)
	}
	after, err := json.Marshal(unmarked(obj))
	if err != nil {
		return "", nil, fmt.Errorf("write: %s: encoding the changed object: %w", name, err)
	}
	pt, data := types.MergePatchType, []byte(nil)
	if builtIn(obj) {
		pt = types.StrategicMergePatchType
		data, err = strategicpatch.CreateTwoWayMergePatch(before, after, obj)
	} else {
		data, err = jsonpatch.CreateMergePatch(before, after)
	}
	if err != nil {
		return "", nil, fmt.Errorf("write: %s: computing the patch of a trimmed object: %w", name, err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return "", nil, fmt.Errorf("write: %s: reading the patch of a trimmed object: %w", name, err)
	}
	if pt == types.MergePatchType && setsList(withoutMetadata(patch)) {
		return "", nil, fmt.Errorf("write: %s: %w: the change sets a list, which a merge patch would replace whole, with what the cache kept of its items", name, ErrTrimmed)
	}
	if _, ok := patch["status"]; ok {
		return "", nil, fmt.Errorf("write: %s: %w: mutate changed the status, which a patch of the object does not write "+
			"where the kind has a status subresource; write it with ApplyStatus or a patch of the status subresource", name, ErrTrimmed)
	}
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["resourceVersion"] = current.GetResourceVersion()
	patch["metadata"] = meta
	data, err = json.Marshal(patch)
	if err != nil {
		return "", nil, fmt.Errorf("write: %s: encoding the patch: %w", name, err)
	}
	return pt, data, nil
}

// unmarked returns a copy of obj without informer.TrimmedAnnotation.
func unmarked[T Object](obj T) T {
	cp := obj.DeepCopyObject().(T)
	if a := cp.GetAnnotations(); a != nil {
		delete(a, informer.TrimmedAnnotation)
		if len(a) == 0 {
			cp.SetAnnotations(nil)
		}
	}
	return cp
}

// builtIn reports whether obj is of a kind of k8s.io/api, whose API server
// takes strategic merge patches; custom resources take JSON merge patches.
func builtIn(obj any) bool {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.HasPrefix(t.PkgPath(), "k8s.io/api/")
}

// withoutMetadata returns patch without its metadata, whose lists (owner
// references, finalizers) informer.Trim keeps whole.
func withoutMetadata(patch map[string]any) map[string]any {
	rest := make(map[string]any, len(patch))
	for k, v := range patch {
		if k != "metadata" {
			rest[k] = v
		}
	}
	return rest
}

// setsList reports whether a JSON merge patch sets a list anywhere.
func setsList(v any) bool {
	switch v := v.(type) {
	case []any:
		return true
	case map[string]any:
		for _, e := range v {
			if setsList(e) {
				return true
			}
		}
	}
	return false
}

// trimmedAnswer returns what of answer, the API server's whole answer to
// the patch that made current (an object its informer trimmed) into obj
// (what mutate made of a copy of current), the controller could see or
// set: the fields of answer that current or obj has, through maps key by
// key and lists item by item (each item on the fields that any item of
// the list has in current or obj), where a field that both show as a zero
// value keeps that value (see zeroShape), with the identity every trimmed
// object
// keeps (name, namespace, UID, resourceVersion, generation, timestamps,
// finalizers, owner references), the answer's trace context annotation,
// which the informer always keeps, and the trimmed mark. It is a new
// object, without managedFields: what the answer is judged on, compared
// with current, and what is kept of it when it settles, compared with the
// cache's later trimmed versions.
//
// A field that neither current nor obj has, or shows other than as a
// zero value, is not judged even where the informer keeps it (what the
// informer keeps is not known here): a field
// the server sets on this write (a default, a webhook's addition) then
// does not count as a change, and a later version the cache shows with it
// is compared as a change. A field that current has, or that mutate set,
// to other than a zero value, counts, also where the informer does not
// keep it.
func trimmedAnswer[T Object](current, obj, answer T) (T, error) {
	var zero T
	var shapes [2]any
	for i, o := range []T{current, obj} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return zero, err
		}
		shapes[i] = shapeOf(u)
	}
	shape := unionShape(unionShape(shapes[0], shapes[1]), identityShape())
	whole, err := runtime.DefaultUnstructuredConverter.ToUnstructured(answer)
	if err != nil {
		return zero, err
	}
	kept, _ := project(whole, shape).(map[string]any)
	out, ok := reflect.New(reflect.TypeOf(answer).Elem()).Interface().(T)
	if !ok {
		return zero, fmt.Errorf("a new %T is not a %T", out, zero)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(kept, out); err != nil {
		return zero, err
	}
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[informer.TrimmedAnnotation] = "true"
	if tp := answer.GetAnnotations()[tracing.Annotation]; tp != "" {
		ann[tracing.Annotation] = tp
	} else {
		delete(ann, tracing.Annotation)
	}
	out.SetAnnotations(ann)
	out.SetManagedFields(nil)
	return out, nil
}

// keepWhole is the shape of a field kept whole, whatever it holds.
type keepWhole struct{}

// identityShape returns the shape of what informer.Trim keeps of every
// object.
func identityShape() map[string]any {
	return map[string]any{"metadata": map[string]any{
		"name": keepWhole{}, "namespace": keepWhole{}, "uid": keepWhole{}, "resourceVersion": keepWhole{},
		"generation": keepWhole{}, "creationTimestamp": keepWhole{}, "deletionTimestamp": keepWhole{},
		"finalizers": keepWhole{}, "ownerReferences": keepWhole{},
	}}
}

// zeroShape is the shape of a field that shows a zero value (null, or the
// zero string, number or boolean): an object may show it only because its
// Go type has no omitempty, where the informer did not keep the field.
// What the answer has there is not judged: it is taken as that zero value.
type zeroShape struct{ zero any }

// shapeOf returns the shape of v, an unstructured value: a map of the
// shapes of its fields, a list of the one shape that all its items have
// together (an empty list when it has none), a zeroShape for a zero
// value, or nil for anything else.
func shapeOf(v any) any {
	if zeroScalar(v) {
		return zeroShape{zero: v}
	}
	switch v := v.(type) {
	case map[string]any:
		s := make(map[string]any, len(v))
		for k, e := range v {
			s[k] = shapeOf(e)
		}
		return s
	case []any:
		var item any
		for i, e := range v {
			if i == 0 {
				item = shapeOf(e)
			} else {
				item = unionShape(item, shapeOf(e))
			}
		}
		if len(v) == 0 {
			return []any{}
		}
		return []any{item}
	}
	return nil
}

// unionShape returns the shape that has the fields of both a and b.
func unionShape(a, b any) any {
	if _, ok := a.(keepWhole); ok {
		return a
	}
	if _, ok := b.(keepWhole); ok {
		return b
	}
	// A zero value says the least of a field.
	if _, ok := b.(zeroShape); ok {
		return a
	}
	if _, ok := a.(zeroShape); ok {
		return b
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return a // b is no map: it says nothing of the fields
		}
		u := make(map[string]any, max(len(a), len(bm)))
		for k, e := range a {
			u[k] = e
		}
		for k, e := range bm {
			if ae, ok := u[k]; ok {
				u[k] = unionShape(ae, e)
			} else {
				u[k] = e
			}
		}
		return u
	case []any:
		bl, ok := b.([]any)
		if !ok {
			return a
		}
		switch {
		case len(a) == 0:
			return bl
		case len(bl) == 0:
			return a
		}
		return []any{unionShape(a[0], bl[0])}
	}
	return b
}

// project returns what of v, an unstructured value, has the fields of
// shape: of a map, the fields shape has (projected on theirs); of a list,
// every item projected on the items' shape; where shape is a zero value,
// that zero value unless v is one too. Anything else, a list whose items
// have no known shape, and what shape keeps whole, are v as it is.
func project(v, shape any) any {
	switch s := shape.(type) {
	case zeroShape:
		if zeroScalar(v) {
			return v
		}
		return s.zero
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(s))
		for k, sub := range s {
			if e, ok := m[k]; ok {
				out[k] = project(e, sub)
			}
		}
		return out
	case []any:
		l, ok := v.([]any)
		if !ok || len(s) == 0 {
			return v
		}
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = project(e, s[0])
		}
		return out
	}
	return v
}

// zeroScalar reports whether v, an unstructured value, is null or the zero
// string, number or boolean.
func zeroScalar(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case int64:
		return v == 0
	case float64:
		return v == 0
	}
	return false
}
