package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failed init undoes its commit by writing back the files it
// removed, but the commit also removed the client directories those files
// left empty, and the undo neither recreates them nor reports the write
// that fails (ErrNotExist is ignored): the stale generated files are gone
// and init says "init left the module as it was".
func TestInitUndoRestoresRemovedFiles(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	require.NoError(t, os.CopyFS(filepath.Join(dir, "apis"), os.DirFS("testdata/fixture/apis")))
	code, _, stderr := apigenIn(t, dir, nil)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	// Generated listers of a group the module no longer has: apigen's
	// files, which init's generation removes as stale.
	require.NoError(t, os.CopyFS(filepath.Join(dir, "generated/listers/gone"), os.DirFS(filepath.Join(dir, "generated/listers/things"))))
	// A go mod tidy that fails, after everything was put in place.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tools"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools/tools.go"), []byte("package tools\n\nimport _ \"example.invalid/nope\"\n"), 0o644))
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	require.Contains(t, before, "generated/listers/gone/v1/thing.go")

	code, _, stderr = apigenIn(t, dir, []string{"GOPROXY=off", "GOFLAGS=-mod=mod"}, "init", "-name", "op", "-api", "other.example.com/v1/Widget")
	require.Equal(t, 1, code, "stderr: %s", stderr)
	require.Contains(t, stderr, "go mod tidy")
	assert.NotContains(t, stderr, "(init left the module as it was)", "the undo that failed to write back the removed files says so")
	after := tree(t, dir)
	assert.Contains(t, after, "generated/listers/gone/v1/thing.go", "the removed file is written back")
	assert.Equal(t, before, after, "a failed init leaves the module as it was")
	assert.Equal(t, beforeDirs, dirs(t, dir))
}
