package multicluster_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// An engage function that blocks on a member that does not answer (it
// ignores its context) keeps neither Run from returning nor the member
// from being removed, as a client constructor of WithClients does not.
func TestEngageIgnoringItsContext(t *testing.T) {
	for _, tt := range []struct {
		name  string
		leave bool
	}{{name: "fleet stops"}, {name: "deleted", leave: true}} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClusters("a", "hung")
			hung := make(chan struct{})
			t.Cleanup(func() { close(hung) }) // runs after the fleet's cleanup
			entered := make(chan struct{})
			var once sync.Once
			engage := func(ctx context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
				if cl.Name == "hung" {
					once.Do(func() { close(entered) })
					<-hung // waits on the member, whatever ctx says
					return nil, ctx.Err()
				}
				return &member{name: cl.Name, client: cl.Client}, nil
			}
			f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient))
			f.members.Set("a", c.config("a"))
			f.members.Set("hung", c.config("hung"))
			f.members.Synced()
			f.ready(t, "a")
			select {
			case <-entered:
			case <-time.After(waitFor):
				t.Fatal("engage was not called for the hung member")
			}
			if tt.leave {
				f.members.Delete("hung")
				assert.Eventually(t, func() bool { _, held := f.fleet.Status("hung"); return !held }, 2*time.Second, time.Millisecond,
					"a member whose engage hangs is removed")
			}
			_ = f.stop(t, 2*time.Second) // reports when Run did not return
		})
	}
}

// A panicking engage function fails the attempt, as a panicking client
// constructor does (TestClientConstructorPanics), rather than crashing
// the process with every member in it. Run in a child process: the
// panic kills the test binary.
func TestEngagePanics(t *testing.T) {
	if os.Getenv("ENGAGE_PANICS_CHILD") == "1" {
		c := newClusters("a", "b")
		var mu sync.Mutex
		calls := 0
		engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
			if cl.Name == "b" {
				mu.Lock()
				calls++
				first := calls == 1
				mu.Unlock()
				if first {
					panic("engage of b panicked")
				}
			}
			return &member{name: cl.Name, client: cl.Client}, nil
		}
		f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient))
		f.members.Set("a", c.config("a"))
		f.members.Set("b", c.config("b"))
		f.members.Synced()
		f.ready(t, "a")
		f.ready(t, "b")
		assert.NoError(t, f.stop(t, waitFor))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngagePanics$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGAGE_PANICS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		panicLine := ""
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "panic: ") {
				panicLine = line
				break
			}
		}
		t.Fatalf("the process running the fleet died: %v: %s\n%s", err, panicLine, lastLines(string(out), 8))
	}
}

func lastLines(s string, n int) string {
	count := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			count++
			if count > n {
				return s[i+1:]
			}
		}
	}
	return s
}
