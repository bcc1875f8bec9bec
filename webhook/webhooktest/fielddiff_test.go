package webhooktest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// fieldDiff names each changed field by its JSON path, into objects and
// lists, with the values sent and got back, absent ones as (absent).
func TestFieldDiffNamesChangedFieldsByPath(t *testing.T) {
	tests := []struct {
		name      string
		sent, got any
		want      string
	}{
		{name: "the same", sent: map[string]any{"a": 1}, got: map[string]any{"a": 1}, want: ""},
		{name: "a nested field", sent: map[string]any{"spec": map[string]any{"count": 3, "item": "x"}}, got: map[string]any{"spec": map[string]any{"count": 0, "item": "x"}},
			want: "  spec.count: sent 3, got 0"},
		{name: "a field got back only", sent: map[string]any{}, got: map[string]any{"b": "<x>"}, want: `  b: sent (absent), got "<x>"`},
		{name: "a key that is no name", sent: map[string]any{"labels": map[string]any{"a.b/c": "1"}}, got: map[string]any{"labels": map[string]any{}},
			want: `  labels["a.b/c"]: sent "1", got (absent)`},
		{name: "list items", sent: map[string]any{"l": []any{1, map[string]any{"x": true}}}, got: map[string]any{"l": []any{1, map[string]any{"x": false}, 3}},
			want: "  l[1].x: sent true, got false\n  l[2]: sent (absent), got 3"},
		{name: "another type", sent: map[string]any{"v": []any{1}}, got: map[string]any{"v": "1"}, want: `  v: sent [1], got "1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fieldDiff(tt.sent, tt.got))
		})
	}
}
