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

// Fleet.Run and docs/multicluster.md promise that during the drain of a
// stop "a member that leaves or moves meanwhile has its reconciles
// cancelled at once" (with ErrLeft). A member the Provider deletes
// during the drain must therefore see its reconcile cancelled, not run
// on until the shutdown timeout with the member's credentials.
func TestReviewLeaveDuringStopDrain(t *testing.T) {
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
	f.members.Delete("a")
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, multicluster.ErrLeft, "the reconcile of the member that left during the drain")
	case <-time.After(2 * time.Second):
		t.Error("the reconcile of a member deleted during the drain was not cancelled within 2s")
		close(release)
	}
	select {
	case <-stopped:
	case <-time.After(waitFor):
		t.Fatal("the fleet did not stop")
	}
}
