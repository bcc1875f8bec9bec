package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The repository tracks no built executable: a `go build` left in
// cmd/apigen (37 MB, ELF, with debug info) went into commit 69332a5 with
// the change to create.go; every clone carries it, and a stale apigen
// binary beside the source is what a user running ./apigen gets.
func TestRepositoryTracksNoExecutable(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	root := strings.TrimSpace(string(top))
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err)
	var bins []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			continue
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		head = head[:n]
		if bytes.Equal(head, []byte("\x7fELF")) || bytes.HasPrefix(head, []byte("MZ")) ||
			bytes.Equal(head, []byte{0xcf, 0xfa, 0xed, 0xfe}) {
			bins = append(bins, name)
		}
	}
	require.Empty(t, bins, "executables tracked in the repository")
}
