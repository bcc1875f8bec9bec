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

// becomeSubreaper says that killDescendants leaves the processes apigen
// inherited at start "and what they start" alone. But apigen is the
// subreaper: a process an inherited background job starts after apigen
// started, and outlives it (sh -c '{ sleep 3; helper & } & exec apigen',
// a job that starts a port-forward and exits), is re-parented to apigen,
// is below apigen but not below a spared pid, and is SIGKILLed at
// SIGINT/SIGTERM, though the run never started it.
func TestStopSparesOrphansOfInheritedProcesses(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := t.TempDir()
	wrapper := "#!/bin/sh\ncase \"$1 $2\" in \"list -e\"|\"list -json\"*) sleep 300;; esac\nexec " + goBin + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))

	mark := "APIGEN_TEST_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		for pid := range processesWith(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", `{ sleep 3; sleep 302 & } & exec "$0"`, exe)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv+"=1", mark, "TMPDIR="+t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.NoError(t, cmd.Start())

	helper := 0
	require.Eventually(t, func() bool {
		running := false
		for pid, line := range processesWith(t, mark) {
			if strings.HasPrefix(line, "sleep 302") {
				helper = pid
			}
			if strings.HasPrefix(line, "sleep 300") {
				running = true
			}
		}
		return helper != 0 && running
	}, 2*time.Minute, 20*time.Millisecond, "the inherited job's helper runs, and the run loads packages")
	time.Sleep(300 * time.Millisecond) // the job exits, its helper is re-parented to apigen
	stat, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(helper), "stat"))
	t.Logf("apigen %d, helper %d: %s", cmd.Process.Pid, helper, stat)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	_, alive := processesWith(t, mark)[helper]
	assert.True(t, alive, "apigen, stopped by SIGINT, killed the process %d (sleep 302) that a job it inherited started: not a process of the run", helper)
}
