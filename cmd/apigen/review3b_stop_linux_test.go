package main

import (
	"bytes"
	"errors"
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

// Review (round 3): main.go says "The go commands apigen runs run in
// process groups of their own: a signal that stops apigen kills them with
// what they started". Only those started with command() do: the go list
// commands of the package loads (gengo's, in deepcopy-gen and client-gen,
// and controller-tools' loader, through golang.org/x/tools/go/packages)
// are started by the library, in apigen's own process group and without
// Pdeathsig, and the signal handler neither knows nor kills them. A
// SIGTERM while one runs (the go command wrapped so that its go list is
// slow, as a cold module cache makes it) ends apigen and leaves that go
// list running.
func TestReviewStopKillsPackageLoads(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := t.TempDir()
	// go list -json is what go/packages runs; apigen's own go list (-deps
	// -f) is not slowed.
	wrapper := "#!/bin/sh\ncase \"$1 $2\" in \"list -e\"|\"list -json\"*) sleep 300;; esac\nexec " + goBin + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))

	mark := "APIGEN_TEST_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		for pid := range processesWith(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.CommandContext(t.Context(), exe)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv+"=1", mark, "TMPDIR="+t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	require.Eventually(t, func() bool {
		for _, line := range processesWith(t, mark) {
			if strings.HasPrefix(line, "sleep 300") {
				return true
			}
		}
		return false
	}, 2*time.Minute, 20*time.Millisecond, "the run loads packages")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the run ends by its signal, not %v; stderr: %s", err, stderr.String())
	assert.Equal(t, 128+int(syscall.SIGTERM), exit.ExitCode(), stderr.String())
	assert.Eventually(t, func() bool { return len(processesWith(t, mark)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"no process of the run is left")
	assert.Empty(t, processesWith(t, mark), "processes left after apigen stopped")
}

// Review (round 3): main.go promises that the go commands apigen runs are
// killed "with what they started" when apigen stops, and "on Linux, so
// does the death of apigen by SIGKILL". Pdeathsig reaches only the go
// command itself: what it started (go run's program, the compiler, here a
// sleep that stands for them) is in its process group, which nobody kills
// once apigen is dead, and outlives the run. The issue's "a killed apigen
// orphans its child processes" still holds one level down.
func TestReviewKilledRunLeavesNoGrandchildren(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nif [ \"$1\" = run ]; then sleep 300 & fi\nexec " + goBin + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(wrapper), 0o755))

	mark := "APIGEN_TEST_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		for pid := range processesWith(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.CommandContext(t.Context(), exe)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv+"=1", mark, "TMPDIR="+t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.NoError(t, cmd.Start())

	require.Eventually(t, func() bool {
		for _, line := range processesWith(t, mark) {
			if strings.HasPrefix(line, "sleep 300") {
				return true
			}
		}
		return false
	}, 5*time.Minute, 20*time.Millisecond, "the run starts go run")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Eventually(t, func() bool { return len(processesWith(t, mark)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"no process of the run is left")
	assert.Empty(t, processesWith(t, mark), "processes left after apigen was killed")
}
