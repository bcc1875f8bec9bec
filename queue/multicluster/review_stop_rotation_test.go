package multicluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Fleet.Run and docs/multicluster.md: on a stop "those in flight run on
// undisturbed until their controller's shutdown timeout"; "only a cluster
// that leaves or moves meanwhile (the Provider deletes it, say) has its
// reconciles cancelled at once". A member whose credentials the Provider
// rotates during the drain (it stays a member) has its reconcile
// cancelled at once with ErrLeft all the same, and, the Fleet stopping,
// the key is not held for a rerun.
func TestReviewRotationDuringStopDrainCancels(t *testing.T) {
	c := newClusters("a")
	started := make(chan struct{})
	release := make(chan struct{})
	causes := make(chan error, 1)
	r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		if key.Name != "slow" {
			return reconcile.Result{}, nil
		}
		close(started)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-release:
			causes <- nil
		}
		return reconcile.Result{}, nil
	}
	f := startFleetWith(t, c, r, []queue.Option{queue.WithWorkers(2), queue.WithShutdownTimeout(waitFor)})
	require.NoError(t, c.clients["a"].Tracker().Add(configMap("app", "slow", "a")))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("no reconcile started")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	time.Sleep(100 * time.Millisecond) // the drain has begun
	rotated := c.config("a")
	rotated.BearerToken = "two"
	f.members.Set("a", rotated)
	select {
	case cause := <-causes:
		assert.NoError(t, cause, "the reconcile of a member whose credentials rotated during the stop's drain was cancelled (it did not leave or move)")
	case <-time.After(time.Second):
		close(release)
		assert.NoError(t, <-causes)
	}
	select {
	case <-stopped:
	case <-time.After(waitFor):
		t.Fatal("the fleet did not stop")
	}
}
