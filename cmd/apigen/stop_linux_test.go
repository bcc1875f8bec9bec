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

// processesWith lists the live processes (not zombies) whose environment
// holds the line env, each with its command line.
func processesWith(t *testing.T, env string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), []byte("\x00"+env+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	return out
}

// A run stopped by SIGTERM while a go command it started runs (go run,
// which builds and runs the OpenAPI schema's program) ends that command
// and what it started too: nothing of the run outlives it. The go command
// is wrapped so that go run starts a long sleep first, a process that
// outlives the run unless its process group is killed.
func TestStopKillsChildren(t *testing.T) {
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
	}, 5*time.Minute, 20*time.Millisecond, "the run starts go run")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the run ends by its signal, not %v; stderr: %s", err, stderr.String())
	assert.Equal(t, 128+int(syscall.SIGTERM), exit.ExitCode(), stderr.String())
	assert.Eventually(t, func() bool { return len(processesWith(t, mark)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"no process of the run is left")
	assert.Empty(t, processesWith(t, mark), "processes left")
}

// A run stopped by SIGTERM while a package load's go list runs (started
// by golang.org/x/tools/go/packages, for gengo's and controller-tools'
// loaders, in apigen's own process group and unknown to the signal
// handler) ends that go list too: apigen, its subreaper, kills every
// process below it. The go command is wrapped so that its go list is
// slow, as a cold module cache makes it.
func TestStopKillsPackageLoads(t *testing.T) {
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

// A SIGKILL of apigen, which it cannot handle, still ends the go commands
// it started itself (the parent-death signal), as main.go's doc says; what
// those started (here a sleep that the wrapped go run leaves, standing for
// go run's program or the compiler) is not apigen's to end then, and the
// test kills it.
func TestKilledRunKillsItsGoCommands(t *testing.T) {
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

	goRun := 0
	require.Eventually(t, func() bool {
		started := false
		for pid, line := range processesWith(t, mark) {
			if strings.HasPrefix(line, "sleep 300") {
				started = true
			}
			if strings.HasPrefix(line, goBin+" run ") {
				goRun = pid
			}
		}
		return started && goRun != 0
	}, 5*time.Minute, 20*time.Millisecond, "the run starts go run")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Eventually(t, func() bool {
		_, alive := processesWith(t, mark)[goRun]
		return !alive
	}, 10*time.Second, 20*time.Millisecond, "the go command apigen started outlives it")
}
