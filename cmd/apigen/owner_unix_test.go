//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file apigen edits (main.go, generate.go) or writes back keeps its
// owner and group: the temporary renamed over it was the process's, so
// that a create run as root, or by another member of the project's
// group, made the user's main.go someone else's.
func TestPutFileKeepsTheOwner(t *testing.T) {
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = 4242, 4243 // any owner: root may give it
	} else if i := slices.IndexFunc(must(os.Getgroups()), func(g int) bool { return g != gid }); i >= 0 {
		gid = must(os.Getgroups())[i] // a group of the user's other than the process's
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(p, []byte("before\n"), 0o640))
	require.NoError(t, os.Chown(p, uid, gid))
	require.NoError(t, os.Symlink("main.go", filepath.Join(dir, "link.go")))

	for _, name := range []string{"main.go", "link.go"} {
		temps.locked(func() {
			require.NoError(t, putFileLocked(filepath.Join(dir, name), []byte("edited through "+name+"\n"), 0o640))
		})
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "edited through "+name+"\n", string(data))
		info, err := os.Stat(p)
		require.NoError(t, err)
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, []int{uid, gid}, []int{int(st.Uid), int(st.Gid)}, "the owner and group of main.go after an edit through %s", name)
	}
}
