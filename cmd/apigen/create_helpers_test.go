package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// widgetOperatorModule is the module made once per test binary, in
// sharedDir, by widgetOperator, or what failed.
var widgetOperatorModule struct {
	once sync.Once
	dir  string
	err  string
}

// sharedDir holds what tests share across the test binary, removed by
// TestMain after the tests.
var sharedDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "apigen-test-") })

// widgetOperator returns a new module in which apigen init -name
// widget-operator -api example.com/v1/Widget has run (with its
// generation, go mod tidy and build): a copy of one made once per test
// binary, so that the tests that start from it do not each pay for init.
func widgetOperator(t *testing.T) string {
	t.Helper()
	m := &widgetOperatorModule
	m.once.Do(func() {
		m.err = "the shared init did not finish (see the first test that asked for it)"
		shared, err := sharedDir()
		require.NoError(t, err)
		dir := operatorModule(t, shared)
		code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
		require.Equal(t, 0, code, "init: %s", stderr)
		m.dir, m.err = dir, ""
	})
	require.Empty(t, m.err)
	dir := filepath.Join(t.TempDir(), "op")
	require.NoError(t, os.CopyFS(dir, os.DirFS(m.dir)))
	return dir
}
