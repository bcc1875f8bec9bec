package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopEnv names the environment variable with which tests stop a run at a
// named step, as "<step>:KILL" or "<step>:TERM": the process sends itself
// that signal when it reaches the step. Steps are the generators' names
// (deepcopy-gen, register-gen, openapi-gen, schema, applyconfiguration-gen,
// client-gen, lister-gen, informer-gen, crd, rbac), "tidy" before init's
// go mod tidy, and, while the files
// are put in place, "commit:<n>" before the n-th file (from 0) is written
// and "remove:<n>" before the n-th stale file is removed.
const stopEnv = "APIGEN_TEST_STOP"

// checkpoint is reached at each step of a run; see stopEnv.
func checkpoint(step string) {
	v := os.Getenv(stopEnv)
	i := strings.LastIndex(v, ":")
	if i < 0 || v[:i] != step {
		return
	}
	sig := v[i+1:]
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		return
	}
	switch sig {
	case "KILL":
		_ = p.Signal(os.Kill)
	case "TERM":
		_ = p.Signal(syscall.SIGTERM)
	default:
		return
	}
	// The signal ends the process; the run goes no further.
	select {}
}

// temporaries are the files and directories a run creates outside what it
// leaves behind: the staging directory, and the file being put in place
// inside the module. All creation and renaming of those happens with mu
// held, so that on a signal the handler, holding mu until the process
// exits, removes every one that exists.
type temporaries struct {
	mu      sync.Mutex
	paths   map[string]bool
	journal *journal // the journal recording the run's changes, if any
}

var temps = &temporaries{paths: map[string]bool{}}

// do runs f with mu held, and then records path as temporary if keep, or
// forgets it if not.
func (t *temporaries) do(path string, keep bool, f func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := f()
	if keep && err == nil {
		t.paths[path] = true
	} else if !keep {
		delete(t.paths, path)
	}
	return err
}

// mkdirTemp makes a new directory in the directory for temporary files,
// as os.MkdirTemp does, and records it as temporary.
func (t *temporaries) mkdirTemp(pattern string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		t.paths[dir] = true
	}
	return dir, err
}

// locked runs f with mu held.
func (t *temporaries) locked(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// removeAll undoes the journal that records the run's changes, if any
// (the files it replaced are written back first, then what it created is
// removed), removes every other temporary, and keeps mu held: nothing is
// created after it. It returns the error of the undo.
func (t *temporaries) removeAll() error {
	t.mu.Lock()
	others := func() {
		for p := range t.paths {
			if t.journal == nil || !t.journal.owns(p) {
				_ = os.RemoveAll(p)
			}
		}
	}
	if t.journal == nil {
		others()
		return nil
	}
	// The other temporaries (a file being put in place) go before the
	// directories the journal made, which may hold them.
	return t.journal.undoLocked(others)
}

// children are the processes a run started and has not waited for yet,
// each the leader of a process group of its own (see command), by pid.
type children struct {
	mu      sync.Mutex
	pids    map[int]bool
	stopped bool // after killAll: no child is started
}

var running = &children{pids: map[int]bool{}}

// command returns the command that runs name with args in a process group
// of its own, killed with its whole group when ctx ends, and, on Linux,
// killed when apigen dies (even by SIGKILL). Run it with runCommand.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = childAttributes()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	return cmd
}

// runCommand runs cmd, made by command, as cmd.Run does, with its process
// known to the signal handler (see handleSignals) while it runs.
func runCommand(cmd *exec.Cmd) error {
	running.mu.Lock()
	if running.stopped {
		running.mu.Unlock()
		return errors.New("apigen is stopping")
	}
	err := cmd.Start()
	if err == nil {
		running.pids[cmd.Process.Pid] = true
	}
	running.mu.Unlock()
	if err != nil {
		return err
	}
	err = cmd.Wait()
	running.mu.Lock()
	delete(running.pids, cmd.Process.Pid)
	running.mu.Unlock()
	return err
}

// killAll kills the process group of every running child, and lets no
// new child start.
func (c *children) killAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for pid := range c.pids {
		_ = killGroup(pid)
	}
}

// stopping is closed when a signal stops the run, before anything is
// cancelled or killed.
var stopping = make(chan struct{})

// exit ends the process with code, unless a signal is stopping the run:
// then the run ended because the signal handler cancelled it or killed
// its children, and the handler ends the process, with its own status,
// once it has killed them all and undone the run.
func exit(code int) {
	select {
	case <-stopping:
		select {}
	default:
		os.Exit(code)
	}
}

// handleSignals makes SIGINT and SIGTERM end the process promptly, even
// while a generator runs: cancel is called, the process groups of the
// children (the go commands apigen runs, and what they run) are killed,
// and, on Linux, every other process below apigen (the go list commands
// that libraries start, what they start, and the processes orphaned by
// those killed, which apigen adopts as their subreaper: see
// becomeSubreaper),
// the journal of the run, if any, is undone and the other temporaries are
// removed (see temporaries.removeAll), and the process exits with status
// 128 plus the signal's number.
func handleSignals(cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		close(stopping)
		cancel()
		running.killAll()
		killDescendants(5 * time.Second)
		undoErr := temps.removeAll()
		code := 130
		if sig == syscall.SIGTERM {
			code = 143
		}
		_, _ = fmt.Fprintf(os.Stderr, "apigen: stopped by %v\n", sig)
		if undoErr != nil {
			_, _ = fmt.Fprintf(os.Stderr, "apigen: undoing what the run wrote: %v\n", undoErr)
		}
		os.Exit(code)
	}()
}
