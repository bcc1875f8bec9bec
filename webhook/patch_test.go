package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

func TestJSONPatch(t *testing.T) {
	tests := []struct {
		name string
		// raw is what the API server sent, before the decoded and encoded
		// object, after the same defaulted.
		raw, before, after string
		// want is raw once patched; wantOps the number of operations.
		want    string
		wantOps int
	}{
		{
			name:   "nothing changed",
			raw:    `{"a":1,"unknown":true}`,
			before: `{"a":1}`, after: `{"a":1}`,
			want: `{"a":1,"unknown":true}`,
		},
		{
			name:   "a field set",
			raw:    `{"spec":{"x":1}}`,
			before: `{"spec":{"x":1}}`, after: `{"spec":{"x":1,"y":2}}`,
			want: `{"spec":{"x":1,"y":2}}`, wantOps: 1,
		},
		{
			name:   "a field changed, a field the type does not know kept",
			raw:    `{"spec":{"x":1,"future":"kept"}}`,
			before: `{"spec":{"x":1}}`, after: `{"spec":{"x":3}}`,
			want: `{"spec":{"x":3,"future":"kept"}}`, wantOps: 1,
		},
		{
			name:   "a zero value the encoding adds is not written unless changed",
			raw:    `{"metadata":{"name":"a"}}`,
			before: `{"metadata":{"name":"a","creationTimestamp":null},"spec":{}}`,
			after:  `{"metadata":{"name":"a","creationTimestamp":null},"spec":{"x":1}}`,
			want:   `{"metadata":{"name":"a"},"spec":{"x":1}}`, wantOps: 1,
		},
		{
			name:   "a nested field whose parents the request lacks",
			raw:    `{"spec":{}}`,
			before: `{"spec":{"template":{"labels":null}}}`, after: `{"spec":{"template":{"labels":{"app":"web"}}}}`,
			want: `{"spec":{"template":{"labels":{"app":"web"}}}}`, wantOps: 1,
		},
		{
			name:   "a field removed",
			raw:    `{"a":1,"b":2}`,
			before: `{"a":1,"b":2}`, after: `{"a":1}`,
			want: `{"a":1}`, wantOps: 1,
		},
		{
			name:   "set to null",
			raw:    `{"a":1,"b":2}`,
			before: `{"a":1,"b":2}`, after: `{"a":1,"b":null}`,
			want: `{"a":1,"b":null}`, wantOps: 1,
		},
		{
			name:   "a list item changed in place keeps its unknown fields",
			raw:    `{"c":[{"name":"a","future":1},{"name":"b"}]}`,
			before: `{"c":[{"name":"a"},{"name":"b"}]}`, after: `{"c":[{"name":"a","image":"i"},{"name":"b"}]}`,
			want: `{"c":[{"name":"a","future":1,"image":"i"},{"name":"b"}]}`, wantOps: 1,
		},
		{
			name:   "a list that grew is replaced",
			raw:    `{"c":["a"]}`,
			before: `{"c":["a"]}`, after: `{"c":["a","b"]}`,
			want: `{"c":["a","b"]}`, wantOps: 1,
		},
		{
			name:   "keys with / and ~",
			raw:    `{"metadata":{"labels":{}}}`,
			before: `{"metadata":{"labels":{}}}`, after: `{"metadata":{"labels":{"example.com/a~b":"v"}}}`,
			want: `{"metadata":{"labels":{"example.com/a~b":"v"}}}`, wantOps: 1,
		},
		{
			name:   "a scalar became an object",
			raw:    `{"a":"x"}`,
			before: `{"a":"x"}`, after: `{"a":{"b":1}}`,
			want: `{"a":{"b":1}}`, wantOps: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := jsonPatch([]byte(tt.raw), []byte(tt.before), []byte(tt.after))
			require.NoError(t, err)
			assert.Len(t, ops, tt.wantOps)
			var doc any
			require.NoError(t, json.Unmarshal([]byte(tt.raw), &doc))
			for _, op := range ops {
				if op.Op == "replace" || op.Op == "remove" {
					assert.True(t, exists(doc, op.Path), "%s of %s, which the request's object lacks (RFC 6902 refuses it)", op.Op, op.Path)
				}
			}
			data, err := json.Marshal(ops)
			require.NoError(t, err)
			patch, err := jsonpatch.DecodePatch(data)
			require.NoError(t, err)
			got, err := patch.Apply([]byte(tt.raw))
			require.NoError(t, err, "patch %s", data)
			assert.JSONEq(t, tt.want, string(got), "patch %s", data)
		})
	}
}

func TestJSONPatchRefusesWhatIsNotJSON(t *testing.T) {
	tests := []struct {
		name               string
		raw, before, after string
		wantErr            string
	}{
		{name: "cut short", raw: `{`, before: `{}`, after: `{}`, wantErr: "the request's object"},
		{name: "a second document", raw: `{}`, before: `{} {}`, after: `{}`, wantErr: "decoding the decoded object as JSON: data after the document"},
		{name: "garbage after the document", raw: `{}`, before: `{}`, after: `{}]`, wantErr: "the defaulted object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonPatch([]byte(tt.raw), []byte(tt.before), []byte(tt.after))
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// exists tells whether the JSON pointer path names a value in doc.
func exists(doc any, path string) bool {
	if path == "" {
		return true
	}
	for _, token := range strings.Split(path[1:], "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch v := doc.(type) {
		case map[string]any:
			var ok bool
			if doc, ok = v[token]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(v) {
				return false
			}
			doc = v[i]
		default:
			return false
		}
	}
	return true
}

// TestJSONPatchKeepsNumbersExact is a regression test: the documents were
// decoded into float64, so integers above 2^53 were patched rounded and a
// change float64 could not tell was not patched at all.
func TestJSONPatchKeepsNumbersExact(t *testing.T) {
	tests := []struct {
		name               string
		raw, before, after string
		want               string
	}{
		{
			name:   "a large integer set",
			raw:    `{"a":1}`,
			before: `{"a":1}`, after: `{"a":1,"b":9007199254740993}`,
			want: `{"a":1,"b":9007199254740993}`,
		},
		{
			name:   "a large integer changed by one",
			raw:    `{"a":9007199254740992}`,
			before: `{"a":9007199254740992}`, after: `{"a":9007199254740993}`,
			want: `{"a":9007199254740993}`,
		},
		{
			name:   "large integers in a list that grew",
			raw:    `{"c":[-9007199254740993,18446744073709551615]}`,
			before: `{"c":[-9007199254740993,18446744073709551615]}`, after: `{"c":[-9007199254740993,18446744073709551615,1.5]}`,
			want: `{"c":[-9007199254740993,18446744073709551615,1.5]}`,
		},
		{
			name:   "a number the type encodes otherwise is left as sent",
			raw:    `{"f":1.0,"n":1e2}`,
			before: `{"f":1,"n":100}`, after: `{"f":1,"n":100,"x":0.1}`,
			want: `{"f":1.0,"n":1e2,"x":0.1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := jsonPatch([]byte(tt.raw), []byte(tt.before), []byte(tt.after))
			require.NoError(t, err)
			data, err := json.Marshal(ops)
			require.NoError(t, err)
			patch, err := jsonpatch.DecodePatch(data)
			require.NoError(t, err)
			got, err := patch.Apply([]byte(tt.raw))
			require.NoError(t, err, "patch %s", data)
			assert.Equal(t, exactJSON(t, []byte(tt.want)), exactJSON(t, got), "patch %s", data)
		})
	}
}

// exactJSON decodes data with its numbers as written.
func exactJSON(t testing.TB, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", data)
	return v
}

// fuzzObject is an API type with the numbers a defaulter may set: large
// integers, floats, lists and maps of them, and lists of lists.
type fuzzObject struct {
	metav1.TypeMeta `json:",inline"`
	Name            string           `json:"name,omitempty"`
	Count           int64            `json:"count,omitempty"`
	Unsigned        *uint64          `json:"unsigned,omitempty"`
	Ratio           float64          `json:"ratio,omitempty"`
	Ints            []int64          `json:"ints,omitempty"`
	Items           []fuzzItem       `json:"items,omitempty"`
	Labels          map[string]int64 `json:"labels,omitempty"`
	Spec            *fuzzSpec        `json:"spec,omitempty"`
}

type fuzzItem struct {
	ID     int64   `json:"id"`
	Values []int64 `json:"values,omitempty"`
}

type fuzzSpec struct {
	Matrix [][]int64 `json:"matrix,omitempty"`
	Limit  *int64    `json:"limit,omitempty"`
}

func (o *fuzzObject) DeepCopyObject() runtime.Object {
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	out := new(fuzzObject)
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

// fuzzDefaults changes o as a defaulter might, each change chosen by rnd
// and big the number it sets.
func fuzzDefaults(o *fuzzObject, rnd *rand.Rand, big int64) {
	for range rnd.IntN(6) {
		switch rnd.IntN(12) {
		case 0:
			o.Count = big
		case 1:
			o.Count += int64(rnd.IntN(3)) - 1
		case 2:
			o.Unsigned = ptr.To(uint64(big) * 2)
		case 3:
			o.Ratio = float64(big) / 3
		case 4:
			o.Ints = append(o.Ints, big, -big)
		case 5:
			if len(o.Ints) > 0 {
				o.Ints[rnd.IntN(len(o.Ints))] = big
			}
		case 6:
			o.Items = append(o.Items, fuzzItem{ID: big, Values: []int64{-big}})
		case 7:
			if len(o.Items) > 0 {
				item := &o.Items[rnd.IntN(len(o.Items))]
				item.ID++
				item.Values = append(item.Values, big)
			}
		case 8:
			if o.Labels == nil {
				o.Labels = map[string]int64{}
			}
			o.Labels["a/b~"+strconv.Itoa(rnd.IntN(3))] = big
		case 9:
			for k := range o.Labels {
				delete(o.Labels, k)
				break
			}
		case 10:
			if o.Spec == nil {
				o.Spec = &fuzzSpec{}
			}
			if len(o.Spec.Matrix) == 0 {
				o.Spec.Matrix = [][]int64{{big}}
			} else {
				row := rnd.IntN(len(o.Spec.Matrix))
				o.Spec.Matrix[row] = append(o.Spec.Matrix[row], big+1)
			}
		case 11:
			o.Name, o.Ints, o.Spec = "", nil, nil
		}
	}
}

// FuzzMutatingPatch defaults random objects, with large integers and
// fields their type does not know, through a Mutating handler: the patch
// applied to the request's object gives exactly the defaulted object, and
// leaves the fields the type does not know as they were sent.
func FuzzMutatingPatch(f *testing.F) {
	for _, seed := range []struct {
		raw string
		rnd uint64
		big int64
	}{
		{`{"kind":"fuzzObject","count":9007199254740993,"future":{"n":9007199254740995}}`, 1, 1<<53 + 1},
		{`{"kind":"fuzzObject","ints":[9007199254740993,-9007199254740993],"unknown":[1.5,-2]}`, 2, -(1<<53 + 3)},
		{`{"kind":"fuzzObject","items":[{"id":9007199254740993,"values":[1],"future":true}],"spec":{"matrix":[[9007199254740993]]}}`, 3, 1<<62 + 1},
		{`{"kind":"fuzzObject","ratio":1.0,"unsigned":18446744073709551615,"labels":{"x":-9223372036854775808},"e":1e400}`, 4, 1<<53 + 1},
		{`{"kind":"fuzzObject","count":9007199254740992,"spec":null,"ints":null}`, 5, 1<<53 + 1},
		{`{"kind":"fuzzObject","name":"n","spec":{"matrix":[[1],[2,3]],"limit":-1,"x":0.1}}`, 6, -1},
		{`{"kind":"fuzzObject"}`, 7, 0},
	} {
		f.Add(seed.raw, seed.rnd, seed.big)
	}
	f.Fuzz(func(t *testing.T, input string, seed uint64, big int64) {
		raw, ok := canonical(input)
		if !ok {
			return
		}
		var defaulted []byte
		h, err := Mutating(func(_ context.Context, req Request[*fuzzObject]) error {
			fuzzDefaults(req.Object, rand.New(rand.NewPCG(seed, uint64(big))), big)
			data, err := json.Marshal(req.Object)
			defaulted = data
			return err
		})
		require.NoError(t, err)
		resp := h.(*admission[*fuzzObject]).admit(context.Background(), &admissionv1.AdmissionRequest{
			Operation: admissionv1.Create,
			Kind:      metav1.GroupVersionKind{Kind: "fuzzObject"},
			Object:    runtime.RawExtension{Raw: raw},
		})
		if !resp.Allowed {
			// An object its type does not decode is refused before the
			// defaulter runs.
			require.Nil(t, defaulted, "refused after defaulting: %v", resp.Result)
			return
		}
		patched := raw
		if len(resp.Patch) > 0 {
			patch, err := jsonpatch.DecodePatch(resp.Patch)
			require.NoError(t, err, "%s", resp.Patch)
			patched, err = patch.Apply(raw)
			require.NoError(t, err, "patch %s to %s", resp.Patch, raw)
		}
		got := new(fuzzObject)
		require.NoError(t, kjson.UnmarshalCaseSensitivePreserveInts(patched, got), "%s", patched)
		encoded, err := json.Marshal(got)
		require.NoError(t, err)
		require.Equal(t, exactJSON(t, defaulted), exactJSON(t, encoded), "patch %s to %s", resp.Patch, raw)

		known := exactJSON(t, encoded).(map[string]any)
		sent, kept := exactJSON(t, raw).(map[string]any), exactJSON(t, patched).(map[string]any)
		for k, v := range sent {
			if _, isKnown := known[k]; !isKnown && !knownField(k) {
				assert.Equal(t, v, kept[k], "field %q the type does not know, patch %s", k, resp.Patch)
			}
		}
	})
}

// knownField tells whether key is a field of fuzzObject.
func knownField(key string) bool {
	t := reflect.TypeFor[fuzzObject]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return true
		}
	}
	return key == "kind" || key == "apiVersion"
}

// canonical is input, a JSON object, without duplicate keys (which the
// API server never sends) and with its numbers as written.
func canonical(input string) ([]byte, bool) {
	d := json.NewDecoder(strings.NewReader(input))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil || d.More() {
		return nil, false
	}
	data, err := json.Marshal(m)
	return data, err == nil
}
