package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// An engage function that blocks on a member that does not answer (it
// ignores its context, as the hung client constructor of defect 7 did)
// must not keep Run from returning nor the member from being removed:
// the same guarantee WithClients now gives its constructor.
func TestReviewEngageIgnoringItsContext(t *testing.T) {
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
