package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The undo writes back or removes only what is still as the run left it,
// and names the rest; a file already as it was is not written at all; a
// write back goes through a temporary renamed over the file a link leads
// to, with the file's mode.
func TestJournalUndoLeavesWhatChangedSince(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, data string, mode os.FileMode) {
		require.NoError(t, os.WriteFile(p(name), []byte(data), mode))
		require.NoError(t, os.Chmod(p(name), mode))
	}
	read := func(name string) string {
		data, err := os.ReadFile(p(name))
		require.NoError(t, err)
		return string(data)
	}
	write("edited", "before\n", 0o600)
	write("saved", "before\n", 0o644)
	write("untouched", "before\n", 0o644)
	require.NoError(t, os.Symlink("edited", p("link")))
	untouched, err := os.Stat(p("untouched"))
	require.NoError(t, err)

	j := newJournal()
	for _, name := range []string{"link", "saved", "untouched"} {
		_, err := journalReplacing(j, p(name))
		require.NoError(t, err)
	}
	require.NoError(t, j.mkdirAll(p("new/dir")))
	temps.locked(func() {
		for name, data := range map[string]string{"link": "run\n", "saved": "run\n", "created": "run\n", "new/dir/created": "run\n", "new/dir/kept": "run\n"} {
			require.NoError(t, putFileLocked(p(name), []byte(data), 0o644))
			if _, ok := j.replaced[p(name)]; !ok {
				j.creatingLocked(p(name))
			}
			j.wroteLocked(p(name), []byte(data))
		}
	})
	// The user's saves while the run goes on.
	write("saved", "the user's\n", 0o644)
	write("new/dir/kept", "the user's\n", 0o644)

	err = j.undo()
	require.Error(t, err)
	assert.Contains(t, err.Error(), p("saved"))
	assert.Contains(t, err.Error(), p("new/dir/kept"))
	assert.NotContains(t, err.Error(), p("link"))

	assert.Equal(t, "before\n", read("link"), "the file the run wrote, as the run left it, is written back")
	info, err := os.Lstat(p("link"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, info.Mode().Type(), "the link stays a link")
	info, err = os.Stat(p("edited"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "its mode is kept")
	assert.Equal(t, "the user's\n", read("saved"), "a file changed since the run wrote it is left alone")
	assert.Equal(t, "the user's\n", read("new/dir/kept"), "a new file changed since is left alone")
	now, err := os.Stat(p("untouched"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(untouched, now), "a file as it was is not written back")
	assert.NoFileExists(t, p("created"))
	assert.NoFileExists(t, p("new/dir/created"))
	assert.DirExists(t, p("new/dir"), "the directory holding a file left alone stays")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), tempSuffix, "no temporary is left")
	}
}
