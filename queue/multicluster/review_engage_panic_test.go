package multicluster_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// A panicking engage function fails the attempt, as a panicking client
// constructor does (TestClientConstructorPanics), rather than crashing
// the process with every member in it. Run in a child process: the
// panic kills the test binary.
func TestReviewEngagePanics(t *testing.T) {
	if os.Getenv("REVIEW_ENGAGE_PANICS") == "1" {
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewEngagePanics$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REVIEW_ENGAGE_PANICS=1")
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
