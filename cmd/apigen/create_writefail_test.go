package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A create whose write of the user's main.go fails midway (a full disk, a
// quota, a file size limit: RLIMIT_FSIZE stands in for them here, as it
// fails every write past a size the same way each time) must leave
// main.go as it was: docs/new-api.md promises that a later step that
// fails undoes what the command wrote, "the files it edited are written
// back as they were". create edits main.go in place (truncated, then
// written) and writes it back in place the same way, so when the write
// back fails too, main.go is left truncated and its content, held only in
// the process's memory, is gone. go.sum, which create had not written at
// all, is truncated by the undo's write back too. commit() does what a
// user's file needs: a temporary beside it, renamed over it.
func TestCreateFailedWriteLeavesMainGoWhole(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit")
	}
	dir := widgetOperator(t)
	before := tree(t, dir)
	mainGo, goSum := before["main.go"], before["go.sum"]
	// A limit below main.go's size (and go.sum's), above generate.go's.
	limit := len(mainGo) / 2
	require.Greater(t, limit, len(before["generate.go"])+200, "main.go too small for this test")
	require.Greater(t, len(goSum), limit)

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), prlimit, append([]string{"--fsize=" + strconv.Itoa(limit), "--", exe}, "create", "api", "-api", "example.com/v1/Gadget")...)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv + "=1")
	out, _ := cmd.CombinedOutput()
	t.Logf("apigen create api under a %d-byte file size limit:\n%s", limit, out)

	after := tree(t, dir)
	assert.Equal(t, len(mainGo), len(after["main.go"]), "main.go's size after the failed create (was %d bytes)", len(mainGo))
	assert.True(t, after["main.go"] == mainGo, "main.go is not as it was: it holds %d bytes, ending %q", len(after["main.go"]), tail(after["main.go"]))
	assert.True(t, after["go.sum"] == goSum, "go.sum is not as it was: %d bytes, was %d", len(after["go.sum"]), len(goSum))
}

func tail(s string) string {
	if i := strings.LastIndexByte(strings.TrimRight(s, "\n"), '\n'); i >= 0 {
		return s[i:]
	}
	return s
}
