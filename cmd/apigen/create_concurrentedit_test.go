package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A create runs for a minute or more (the generators, go mod tidy, the
// build); the user keeps working meanwhile. When it then fails (here its
// build, of a main package with the user's unfinished wip.go), its undo
// writes back every file of its journal as it was when create started,
// whatever the file holds now: a change the user saved to main.go while
// create ran is silently lost, and create says "the module is as it
// was". The undo should write back only a file that still holds what
// create wrote, and say which it left alone.
func TestCreateUndoKeepsWhatTheUserSavedMeanwhile(t *testing.T) {
	t.Parallel()
	realGo, err := exec.LookPath("go")
	require.NoError(t, err)
	dir := widgetOperator(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wip.go"), []byte("package main\n\nfunc wip() int { return \"not yet\" }\n"), 0o644))

	// The user's save of main.go, while create's build of what it wrote
	// (go test -c) runs (a go on PATH that saves it, then runs the real
	// go).
	const saved = "\n// Notes the user saved to main.go while apigen create ran.\n"
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = test ]; then printf '%s' '" + saved + "' >> main.go; fi\nexec " + realGo + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755))

	code, stdout, stderr := apigenIn(t, dir, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stderr, "does not build")
	t.Logf("stderr: %s", stderr)
	mainGo, err := os.ReadFile(filepath.Join(dir, "main.go"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(mainGo), saved), "the user's change to main.go, saved while create ran, is gone after create's undo")
}

// go.mod is the run's only from go mod tidy on: a create that fails
// before it leaves a change the user saved to go.mod meanwhile, and names
// it, rather than writing back what go.mod held before the run.
func TestCreateFailedBeforeTidyKeepsTheUsersGoMod(t *testing.T) {
	t.Parallel()
	realGo, err := exec.LookPath("go")
	require.NoError(t, err)
	dir := widgetOperator(t)

	// The user's save of go.mod while create's generators load the
	// packages, whose load then fails (a go on PATH that does both).
	const saved = "\n// Notes the user saved to go.mod while apigen create ran.\n"
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = list ]; then printf '%s' '" + saved + "' >> go.mod; echo 'the load fails' >&2; exit 1; fi\nexec " + realGo + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755))

	code, stdout, stderr := apigenIn(t, dir, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stderr, "generating")
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(goMod), saved, "the user's change to go.mod, saved while create ran, is gone after create's undo")
	assert.Contains(t, stderr, filepath.Join(dir, "go.mod"), "the undo names go.mod, which it left alone")
	assert.NotContains(t, stderr, "the module is as it was")
}
