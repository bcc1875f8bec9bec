package controlplane

import (
	"strings"
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
