package controlplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// logTailLines is how much of each component log a failed test prints.
const logTailLines = 80

// StartT starts a control plane for the test t and fails it at once if that
// is not possible. When the test (and its subtests) end, the control plane
// is stopped and, if the test failed, the last lines of every component log
// are printed and the state directory is kept for inspection. Cleanup runs
// even when the test panics; if the whole test binary dies, every component
// still gets SIGKILL because it is tied to the process that started it.
func StartT(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	cp, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	cp.testOwned = true
	t.Logf("control plane (%s) ready in %s; kubeconfig %s", opts.Size, cp.StartupDuration().Round(time.Millisecond), cp.KubeconfigPath())
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			cp.DumpLogs(&b, logTailLines)
			t.Logf("component logs:\n%s", b.String())
			cp.keepStateDir()
			t.Logf("control plane state kept in %s", cp.StateDir())
		}
		_ = cp.Stop()
		if err := cp.removeStateDir(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return cp
}

// Shared is one control plane for all the tests of a package: the first
// test that calls Get starts it, and Run stops it when the tests are done.
// A package whose selected tests never call Get starts nothing. Declare it
// at package level and let TestMain return Run:
//
//	var env = controlplane.Shared{Options: controlplane.Options{
//		CRDs:  []string{"config/crd"},
//		Users: []controlplane.User{{Name: "widget-controller", ClusterRoles: []string{"widget-controller"}}},
//	}}
//
//	func TestMain(m *testing.M) { os.Exit(env.Run(m)) }
//
//	func TestWidget(t *testing.T) {
//		cp := env.Get(t)
//
// Tests share the API's state, so each should work in its own namespace.
// A Shared must not be copied after first use.
type Shared struct {
	// Options configures the control plane; the zero value starts
	// APIServerOnly.
	Options Options

	running atomic.Bool
	once    sync.Once
	mu      sync.Mutex // guards cp and err
	cp      *ControlPlane
	err     error
}

// Run runs the tests (m.Run) and then stops the control plane, if one was
// started. When a test failed it first writes the last lines of every
// component log to standard error and keeps the state directory, naming
// it. It returns the code for os.Exit: m.Run's, or 1 if stopping failed.
func (s *Shared) Run(m *testing.M) int {
	s.running.Store(true)
	code := m.Run()
	s.mu.Lock()
	cp := s.cp
	s.mu.Unlock()
	if cp == nil {
		return code
	}
	if code != 0 {
		cp.DumpLogs(os.Stderr, logTailLines)
		cp.keepStateDir()
		fmt.Fprintf(os.Stderr, "control plane state kept in %s\n", cp.StateDir())
	}
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		return 1
	}
	return code
}

// Get returns the package's control plane, starting it on the first call
// (bounded by Options.StartTimeout, which does not count a build of missing
// binaries with BuildMissing). If it cannot start, Get fails t, and
// every later call fails its test at once with the same error. Get fails t
// when TestMain did not hand the tests to Run, since nothing would stop the
// control plane then.
func (s *Shared) Get(t testing.TB) *ControlPlane {
	t.Helper()
	if !s.running.Load() {
		t.Fatal("controlplane.Shared.Get: TestMain must run the tests with Shared.Run, as in os.Exit(env.Run(m))")
		return nil
	}
	s.once.Do(func() {
		cp, err := Start(context.Background(), s.Options)
		if err == nil {
			t.Logf("shared control plane (%s) ready in %s; kubeconfig %s", s.Options.Size, cp.StartupDuration().Round(time.Millisecond), cp.KubeconfigPath())
		}
		s.mu.Lock()
		s.cp, s.err = cp, err
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		t.Fatalf("starting the shared control plane: %v", s.err)
		return nil
	}
	return s.cp
}
