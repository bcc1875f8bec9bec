package webhook

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
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
	_, err := jsonPatch([]byte(`{`), []byte(`{}`), []byte(`{}`))
	assert.ErrorContains(t, err, "the request's object")
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
