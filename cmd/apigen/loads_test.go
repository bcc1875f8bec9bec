package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The controller-gen loads complete copies of go.mod and go.sum, except
// where the go command would refuse them: in a vendored module, and in
// workspace mode, where they use the copies outside the workspace only
// if the workspace cannot resolve the packages.
func TestPackageLoads(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, dir string)
		wantCopy  bool
		wantNoSum bool
	}{
		{name: "a module", wantCopy: true},
		{name: "a module without go.sum", wantCopy: true, wantNoSum: true,
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "go.sum"))) }},
		{name: "a vendored module", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "vendor"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "vendor/modules.txt"), nil, 0o644))
		}},
		{name: "workspace mode", setup: func(t *testing.T, dir string) {
			work := filepath.Join(dir, "go.work")
			require.NoError(t, os.WriteFile(work, []byte("go 1.26.0\n\nuse .\n"), 0o644))
			t.Setenv("GOWORK", work)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.26.0\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), []byte("example.com/x v1.0.0/go.mod h1:abc=\n"), 0o644))
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			loads, closeLoads, err := newPackageLoads(t.Context(), dir, "")
			require.NoError(t, err)
			flags := loads.config().BuildFlags
			if !tt.wantCopy {
				assert.Empty(t, flags, "the module's own files")
				if tt.name == "workspace mode" {
					// Where the workspace lacks a requirement: outside it,
					// against the copies.
					require.NotNil(t, loads.fallback)
					assert.Contains(t, loads.fallback.config().Env, "GOWORK=off")
					assert.Contains(t, loads.fallback.config().BuildFlags, "-mod=mod")
				} else {
					assert.Nil(t, loads.fallback)
				}
				closeLoads()
				return
			}
			require.Len(t, flags, 2)
			assert.Equal(t, "-mod=mod", flags[0])
			modFile, ok := strings.CutPrefix(flags[1], "-modfile=")
			require.True(t, ok, flags[1])
			assert.NotEqual(t, dir, filepath.Dir(modFile), "the copies are outside the module")
			for _, name := range []string{"go.mod", "go.sum"} {
				copied, err := os.ReadFile(filepath.Join(filepath.Dir(modFile), name))
				if name == "go.sum" && tt.wantNoSum {
					assert.ErrorIs(t, err, os.ErrNotExist)
					continue
				}
				require.NoError(t, err)
				original, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, string(original), string(copied), name)
			}
			closeLoads()
			assert.NoDirExists(t, filepath.Dir(modFile), "closing removes the copies")
		})
	}
}

// Only an import the build list provides no module for sends a load or
// build outside the workspace; other errors of the go command do not.
func TestUnresolvedImport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg, want string
	}{
		{name: "no required module",
			msg:  "go: building\nmain.go:3:8: no required module provides package k8s.io/client-go/rest; to add it:\n\tgo get k8s.io/client-go/rest\n",
			want: "main.go:3:8: no required module provides package k8s.io/client-go/rest; to add it:"},
		{name: "module lookup", msg: "x imports\n\texample.invalid/nope: cannot find module providing package example.invalid/nope",
			want: "example.invalid/nope: cannot find module providing package example.invalid/nope"},
		{name: "implicitly required",
			msg:  "controller.go:15:2: package example.com/op/generated/clientset/versioned imports k8s.io/client-go/util/flowcontrol from implicitly required module; to add missing requirements, run:\n\tgo get k8s.io/client-go@v0.37.2\n",
			want: "controller.go:15:2: package example.com/op/generated/clientset/versioned imports k8s.io/client-go/util/flowcontrol from implicitly required module; to add missing requirements, run:"},
		{name: "go.sum", msg: "missing go.sum entry for module providing package k8s.io/api/core/v1",
			want: "missing go.sum entry for module providing package k8s.io/api/core/v1"},
		{name: "a compile error", msg: "./types.go:9:2: undefined: Foo"},
		{name: "a syntax error", msg: "./types.go:3:1: expected declaration, found x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, unresolvedImport(tt.msg))
		})
	}
}
