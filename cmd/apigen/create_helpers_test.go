package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goTry runs the go command in dir and returns its output and error.
func goTry(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// plannedOperator writes the files init writes for example.com/v1/Widget
// (without generating), with edit applied to each, and loads it: an
// operator to plan create's changes in, in milliseconds.
func plannedOperator(t *testing.T, edit func(rel, src string) string) (*operatorDir, string) {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl", "controller.go": "controller.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		text := string(src)
		if edit != nil {
			text = edit(rel, text)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	return op, dir
}
