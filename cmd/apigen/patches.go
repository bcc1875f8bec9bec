package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	"sigs.k8s.io/yaml"
)

// applyUserPatches applies the user's patches of the deploy kustomization,
// the files of dir (as readPatches lists them), to the objects of o, as
// kustomize does: a strategic-merge patch to the object of its kind, name
// and (if it names one) namespace, a JSON patch to the Deployment. The
// check then sees what kubectl apply -k installs. A patch of an object o
// does not hold is left to kustomize.
func applyUserPatches(o *webhookOutput, dir string) error {
	patches, err := readPatches(dir)
	if err != nil {
		return err
	}
	for _, p := range patches {
		file := filepath.Join(dir, p.name)
		if p.json {
			if o.deployment == nil {
				continue
			}
			if o.deployment, err = applyJSONPatch(o.deployment, p.ops); err != nil {
				return fmt.Errorf("-deploy: the patch %s of the Deployment: %w", file, err)
			}
			continue
		}
		for _, patch := range p.objects {
			if err := applyStrategicPatch(o, patch); err != nil {
				return fmt.Errorf("-deploy: the patch %s: %w", file, err)
			}
		}
	}
	return nil
}

// applyStrategicPatch applies a strategic-merge patch to the object of o
// it targets, if o holds it.
func applyStrategicPatch(o *webhookOutput, patch map[string]any) error {
	targets := []*map[string]any{&o.service, &o.deployment}
	for i := range o.configurations {
		targets = append(targets, &o.configurations[i])
	}
	for _, t := range targets {
		if *t == nil || !patchTargets(patch, *t) {
			continue
		}
		patched, err := kustomizeMerge(*t, patch)
		if err != nil {
			return err
		}
		if patched == nil {
			// $patch: delete. The operator still serves what the
			// object configures, and publishes its CA into it.
			return fmt.Errorf("it deletes the %s %s, which the operator's webhooks need: remove the webhook's marker instead",
				str(*t, "kind"), str(*t, "metadata", "name"))
		}
		*t = patched
	}
	return nil
}

// kustomizeMerge returns obj with the strategic-merge patch applied as
// kustomize's patch transformer applies it (kubectl kustomize and kubectl
// apply -k): kyaml's merge, which takes the list merge keys and strategies
// of the object's kind from kyaml's built-in Kubernetes OpenAPI schema
// (container and Service ports, for instance, are keyed by port and
// protocol), honours the $patch directives and prepends the patch's new
// list elements; the object keeps its kind, name and namespace. It returns
// nil if the patch deletes the object. obj and patch are not changed.
func kustomizeMerge(obj, patch map[string]any) (map[string]any, error) {
	// kyaml finds the schema by the object's apiVersion and kind, which
	// the generated files name; name them where obj (a test's) does not.
	dest := maps.Clone(obj)
	addedVersion := false
	if str(dest, "apiVersion") == "" {
		if v := generatedAPIVersions[str(dest, "kind")]; v != "" {
			dest["apiVersion"], addedVersion = v, true
		}
	}
	destNode, err := toRNode(dest)
	if err != nil {
		return nil, err
	}
	patchNode, err := toRNode(patch)
	if err != nil {
		return nil, err
	}
	merged, err := merge2.Merge(patchNode, destNode, kyaml.MergeOptions{ListIncreaseDirection: kyaml.MergeOptionsListPrepend})
	if err != nil {
		return nil, err
	}
	if merged.IsNilOrEmpty() {
		return nil, nil
	}
	merged.SetKind(str(obj, "kind"))
	if err := merged.SetName(str(obj, "metadata", "name")); err != nil {
		return nil, err
	}
	if err := merged.SetNamespace(str(obj, "metadata", "namespace")); err != nil {
		return nil, err
	}
	data, err := merged.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	if addedVersion && str(out, "apiVersion") == dest["apiVersion"] {
		delete(out, "apiVersion")
	}
	return out, nil
}

// toRNode returns the kyaml node of a JSON object, in YAML's block
// style, as kustomize reads the files: the merge keeps the style of the
// patched object's scalars (a JSON document's strings are all quoted, and
// a number merged into one would become a string).
func toRNode(m map[string]any) (*kyaml.RNode, error) {
	data, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	return kyaml.Parse(string(data))
}

// generatedAPIVersions are the apiVersions of the kinds of webhookOutput.
var generatedAPIVersions = map[string]string{
	"Service":                        "v1",
	"Deployment":                     "apps/v1",
	"ValidatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
	"MutatingWebhookConfiguration":   "admissionregistration.k8s.io/v1",
}

// patchTargets reports whether the strategic-merge patch is one of obj, as
// kustomize finds it: the same kind and name (and apiVersion, if the patch
// names one), and, for a namespaced
// object, the same namespace, where a patch that names none stands for
// the default namespace. A patch that targets nothing here is left to
// kustomize, which fails on it if the kustomization holds no such object.
func patchTargets(patch, obj map[string]any) bool {
	if str(patch, "kind") != str(obj, "kind") || str(patch, "metadata", "name") != str(obj, "metadata", "name") {
		return false
	}
	ov := str(obj, "apiVersion")
	if ov == "" {
		ov = generatedAPIVersions[str(obj, "kind")]
	}
	if v := str(patch, "apiVersion"); v != "" && ov != "" && v != ov {
		return false // a kind of the same name in another group or version
	}
	switch str(obj, "kind") {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return true // cluster-scoped: kustomize ignores the patch's namespace
	}
	ns, objNS := str(patch, "metadata", "namespace"), str(obj, "metadata", "namespace")
	if ns == "" {
		ns = "default"
	}
	if objNS == "" {
		objNS = "default"
	}
	return ns == objNS
}

// applyJSONPatch applies the operations of a JSON patch (RFC 6902) to
// doc, a copy of which it returns.
func applyJSONPatch(doc map[string]any, ops []map[string]any) (map[string]any, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var root any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	for _, op := range ops {
		name, _ := op["op"].(string)
		path, _ := op["path"].(string)
		switch name {
		case "add", "replace":
			if root, err = setPointer(root, path, op["value"], name == "add"); err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, path, err)
			}
		case "remove":
			if root, _, err = removePointer(root, path); err != nil {
				return nil, fmt.Errorf("remove %s: %w", path, err)
			}
		case "move", "copy":
			from, _ := op["from"].(string)
			v, err := getPointer(root, from)
			if err != nil {
				return nil, fmt.Errorf("%s from %s: %w", name, from, err)
			}
			v = runtime.DeepCopyJSONValue(v) // the copy is changed apart from the original
			if name == "move" {
				if root, _, err = removePointer(root, from); err != nil {
					return nil, fmt.Errorf("move from %s: %w", from, err)
				}
			}
			if root, err = setPointer(root, path, v, true); err != nil {
				return nil, fmt.Errorf("%s to %s: %w", name, path, err)
			}
		case "test":
			// Kustomize fails on a failed test; the check need not.
		default:
			return nil, fmt.Errorf("unknown operation %q", name)
		}
	}
	out, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the patched document is not an object")
	}
	return out, nil
}

// pointerTokens splits a JSON pointer into its unescaped tokens.
func pointerTokens(pointer string) ([]string, error) {
	if pointer == "" {
		return nil, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("the pointer %q does not begin with /", pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// getPointer returns the value at pointer in v.
func getPointer(v any, pointer string) (any, error) {
	tokens, err := pointerTokens(pointer)
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[t]; !ok {
				return nil, fmt.Errorf("no member %q", t)
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no element %q", t)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("%q is in neither an object nor an array", t)
		}
	}
	return v, nil
}

// setPointer sets the value at pointer in v (inserting it into an array
// if insert) and returns v.
func setPointer(v any, pointer string, value any, insert bool) (any, error) {
	tokens, err := pointerTokens(pointer)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return value, nil
	}
	parentPointer := pointer[:strings.LastIndex(pointer, "/")]
	parent, err := getPointer(v, parentPointer)
	if err != nil {
		return nil, err
	}
	last := tokens[len(tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = value
		return v, nil
	case []any:
		i := len(c)
		if last != "-" {
			if i, err = strconv.Atoi(last); err != nil || i < 0 || i > len(c) || (!insert && i == len(c)) {
				return nil, fmt.Errorf("no element %q", last)
			}
		} else if !insert {
			return nil, fmt.Errorf("no element %q", last)
		}
		if insert {
			c = append(c[:i], append([]any{value}, c[i:]...)...)
		} else {
			c[i] = value
		}
		return setPointer(v, parentPointer, c, false)
	default:
		return nil, fmt.Errorf("%q is in neither an object nor an array", last)
	}
}

// removePointer removes the value at pointer from v and returns v and
// the value.
func removePointer(v any, pointer string) (any, any, error) {
	tokens, err := pointerTokens(pointer)
	if err != nil || len(tokens) == 0 {
		return nil, nil, fmt.Errorf("cannot remove %q", pointer)
	}
	parentPointer := pointer[:strings.LastIndex(pointer, "/")]
	parent, err := getPointer(v, parentPointer)
	if err != nil {
		return nil, nil, err
	}
	last := tokens[len(tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		old, ok := c[last]
		if !ok {
			return nil, nil, fmt.Errorf("no member %q", last)
		}
		delete(c, last)
		return v, old, nil
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return nil, nil, fmt.Errorf("no element %q", last)
		}
		old := c[i]
		v, err = setPointer(v, parentPointer, append(c[:i:i], c[i+1:]...), false)
		return v, old, err
	default:
		return nil, nil, fmt.Errorf("%q is in neither an object nor an array", last)
	}
}
