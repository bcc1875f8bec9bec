package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Value is absent from a remove, and "null" for a null value.
	Value json.RawMessage `json:"value,omitempty"`
}

// setTo makes an operation that sets path to v.
func setTo(op, path string, v any) patchOp {
	data, err := json.Marshal(v)
	if err != nil {
		// v came from decodeExact, which gives only values that encode.
		panic(fmt.Sprintf("webhook: encoding a patch value: %v", err))
	}
	return patchOp{Op: op, Path: path, Value: data}
}

// jsonPatch returns the operations that make raw, the object as the API
// server sent it, carry what a defaulter changed: before is the object as
// decoded into its Go type and encoded again, after the same once
// defaulted. Only what differs between before and after is patched, so a
// field of raw that the Go type does not know, or encodes differently, is
// left as it is, except inside a list whose length the defaulter changed,
// which is replaced whole. Numbers are compared and written as the
// documents spell them, never through float64, so that an integer beyond
// 2^53 is patched exactly.
func jsonPatch(raw, before, after []byte) ([]patchOp, error) {
	var r, b, a any
	for _, d := range []struct {
		data []byte
		into *any
		name string
	}{{raw, &r, "the request's object"}, {before, &b, "the decoded object"}, {after, &a, "the defaulted object"}} {
		if err := decodeExact(d.data, d.into); err != nil {
			return nil, fmt.Errorf("webhook: decoding %s as JSON: %w", d.name, err)
		}
	}
	var ops []patchOp
	diff(&ops, "", r, true, b, a)
	return ops, nil
}

// decodeExact decodes the JSON document data into v, its numbers as
// json.Number, which keeps them as written.
func decodeExact(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the document")
	}
	return nil
}

// diff appends to ops what turns raw (present tells whether it exists) at
// path into after, where before and after differ. before and after are
// encoded by one encoder from one Go type, so an equal number is spelled
// alike in both, and json.Number's text compares it exactly.
func diff(ops *[]patchOp, path string, raw any, present bool, before, after any) {
	if reflect.DeepEqual(before, after) {
		return
	}
	switch a := after.(type) {
	case map[string]any:
		r, rok := raw.(map[string]any)
		b, bok := before.(map[string]any)
		if !present || !rok || !bok {
			break
		}
		for _, k := range sortedKeys(b) {
			if _, kept := a[k]; !kept {
				if _, there := r[k]; there {
					*ops = append(*ops, patchOp{Op: "remove", Path: path + "/" + escape(k)})
				}
			}
		}
		for _, k := range sortedKeys(a) {
			rv, there := r[k]
			diff(ops, path+"/"+escape(k), rv, there, b[k], a[k])
		}
		return
	case []any:
		r, rok := raw.([]any)
		b, bok := before.([]any)
		if !present || !rok || !bok || len(r) != len(b) || len(b) != len(a) {
			break
		}
		for i := range a {
			diff(ops, path+"/"+strconv.Itoa(i), r[i], true, b[i], a[i])
		}
		return
	}
	switch {
	case path == "":
		// The whole object changed its shape; JSON patch replaces the
		// document at the empty path.
		*ops = append(*ops, setTo("replace", path, after))
	case !present:
		*ops = append(*ops, setTo("add", path, after))
	default:
		*ops = append(*ops, setTo("replace", path, after))
	}
}

// escape makes a map key one reference token of a JSON pointer (RFC 6901).
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// sortedKeys orders a map's keys, so that one change gives one patch.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
