package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// init refuses bad flags and a module that has the operator's files
// already, and writes nothing then. (testenv/layout's
// TestNewOperatorFromInit runs it in a new module through go test and
// an image.)
func TestInitRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		existing string
		wantCode int
		wantErr  string
	}{
		{name: "no name", args: []string{"init"}, wantCode: 2, wantErr: `-name "" is not a name`},
		{name: "a name with capitals", args: []string{"init", "-name", "My-Operator"}, wantCode: 2, wantErr: `-name "My-Operator" is not a name`},
		{name: "a namespace that is not a name", args: []string{"init", "-name", "op", "-namespace", "a.b"}, wantCode: 2, wantErr: `-namespace "a.b" is not a namespace name`},
		{name: "an API without a version", args: []string{"init", "-name", "op", "-api", "example.com/Widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "an API of a group without a dot", args: []string{"init", "-name", "op", "-api", "example/v1/Widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "a lowercase kind", args: []string{"init", "-name", "op", "-api", "example.com/v1/widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "an argument too many", args: []string{"init", "-name", "op", "extra"}, wantCode: 2, wantErr: `unexpected arguments ["extra"]`},
		{name: "a module with a main.go", args: []string{"init", "-name", "op"}, existing: "main.go", wantCode: 1, wantErr: "the module already has controller.go, main.go"},
		{name: "a module with the API's types", args: []string{"init", "-name", "op", "-api", "example.com/v1/Thing"}, existing: "apis/example/v1/types.go", wantCode: 1, wantErr: "the module already has apis/example/v1/types.go, controller.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			if tt.existing != "" {
				p := filepath.Join(dir, tt.existing)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte("package mine\n"), 0o644))
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, _, stderr := apigen(t, dir, tt.args...)
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
		})
	}
}
