package write

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
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
