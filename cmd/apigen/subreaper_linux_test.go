package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apigen kills, at SIGINT or SIGTERM, "every other process below it",
// found by their parent pid in /proc: also a process that is its child
// without being of the run. A script that starts a helper in the
// background and then execs apigen (sh -c 'helper & exec apigen ...', a
// Makefile or CI step; the helper a port-forward or a test control plane)
// hands apigen that child; a Ctrl-C, which a non-interactive shell's
// background job ignores, or a CI timeout's SIGTERM to apigen then makes
// apigen SIGKILL the helper, which it never started. Only the processes
// the run started (its children's process groups, its package loads, and
// the orphans it adopted after it became the subreaper) are apigen's to
// kill.
func TestStopKillsOnlyProcessesOfTheRun(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := t.TempDir()
	// The package loads' go list is slow, as in TestStopKillsPackageLoads,
	// so that the signal comes while the run runs.
	wrapper := "#!/bin/sh\ncase \"$1 $2\" in \"list -e\"|\"list -json\"*) sleep 300;; esac\nexec " + goBin + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))

	mark := "APIGEN_TEST_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		for pid := range processesWith(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", `sleep 301 & exec "$0"`, exe)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv+"=1", mark, "TMPDIR="+t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.NoError(t, cmd.Start())

	helper := 0
	require.Eventually(t, func() bool {
		running := false
		for pid, line := range processesWith(t, mark) {
			if strings.HasPrefix(line, "sleep 301") {
				helper = pid
			}
			if strings.HasPrefix(line, "sleep 300") {
				running = true
			}
		}
		return helper != 0 && running
	}, 2*time.Minute, 20*time.Millisecond, "the helper runs, and the run loads packages")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	_, alive := processesWith(t, mark)[helper]
	assert.True(t, alive, "apigen, stopped by SIGINT, killed the process %d (sleep 301) that the script started before it: not a process of the run", helper)
}
