package multicluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Results' doc: "A member's results are dropped when it leaves the
// Fleet, no longer reported by its Provider (its hub keys are added then
// too)". lockedForget decides "left" when the old engagement is
// forgotten, by whether the name is wanted at that moment, not when it
// left: a member the Provider stopped reporting (a cluster removed from
// the fleet; its reconciles cancelled with ErrLeft, "the cluster left")
// and that is reported again before its last reconcile returned (the
// cluster re-registered, maybe a new one of the same name) keeps the
// results of the one that left, and its hub keys are not added: its
// entry says Ready from a result that nothing in the new member made.
func TestResultsDroppedWhenMemberLeftAndCameBack(t *testing.T) {
	c := newClusters("a")
	f := startFleet(t, c, newRecorder().copyCluster)
	q := newAdds()
	results, err := multicluster.NewResults[string](f.fleet, q)
	require.NoError(t, err)
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	hub := cacheName("app", "web")
	results.Set(hub, "a", multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 2, Value: "rv-1"})
	adds := q.count(hub)

	// A hub-centric reconcile is still writing to a...
	entered, left, release := make(chan struct{}), make(chan error, 1), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		f.fleet.Each(context.Background(), 0, func(ctx context.Context, _ string, _ *member) error {
			close(entered)
			<-ctx.Done()
			left <- context.Cause(ctx)
			<-release
			return ctx.Err()
		})
	})
	<-entered
	// ...when a is removed from the fleet: it leaves.
	f.members.Delete("a")
	require.Eventually(t, func() bool { return !slices.Contains(f.fleet.Clusters(), "a") }, waitFor, time.Millisecond, "a leaves")
	select {
	case cause := <-left:
		require.ErrorIs(t, cause, multicluster.ErrLeft)
	case <-time.After(waitFor):
		t.Fatal("the reconcile in a is not cancelled")
	}
	// It is registered again before that reconcile returned.
	f.members.Set("a", c.config("a"))
	close(release)
	wg.Wait()
	// The new engagement builds a's client again and is ready.
	require.Eventually(t, func() bool { return c.builtFor("a") == 2 }, waitFor, time.Millisecond, "a engaged again")
	f.ready(t, "a")

	_, kept := results.Get(hub, "a")
	assert.False(t, kept, "the result of the member that left is kept for the one that came back")
	assert.Greater(t, q.count(hub), adds, "the hub key is not added when a left")
}
