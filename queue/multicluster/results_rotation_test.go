package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Results keeps a member's results while it is merely not ready, and
// drops them only when it leaves (Results' doc: "not while it is merely
// not ready: Status then reports it Unreachable, with the last result's
// ObservedGeneration"). A member whose credentials rotate is still a
// member (Fleet.Each reports it ErrNotReady, Members lists it): its
// results must stay.
func TestResultsKeptWhileCredentialsRotate(t *testing.T) {
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

	// The new credentials' client is held: a stays engaging, not ready.
	hold := make(chan struct{})
	c.mu.Lock()
	c.hold["a"] = hold
	c.mu.Unlock()
	t.Cleanup(func() { close(hold) })
	rotated := c.config("a")
	rotated.BearerToken = "rotated"
	f.members.Set("a", rotated)
	// The old engagement drains and ends, the new one starts and waits
	// for its client (a is engaging, not ready).
	require.Eventually(t, func() bool { return c.heldBuilds("a") > 0 }, waitFor, 5*time.Millisecond,
		"the engagement with the rotated credentials builds its client")
	st, held := f.fleet.Status("a")
	require.True(t, held)
	require.False(t, st.Ready)
	require.Contains(t, f.fleet.Members(), "a", "still a member")

	_, kept := results.Get(hub, "a")
	assert.True(t, kept, "the result of a member whose credentials rotate is dropped as if it had left")
	statuses, _ := results.Status(hub, 2, f.fleet.Members())
	require.Len(t, statuses, 1)
	assert.Equal(t, multicluster.ReasonUnreachable, statuses[0].Reason)
	assert.Equal(t, int64(2), statuses[0].ObservedGeneration, "the last result's ObservedGeneration while not ready")
}

// A member ready at the Fleet's first sync whose credentials rotate
// after it is engaged again: ready again after the first sync, Reported
// no longer waits for its first result.
func TestReportedDoesNotWaitForMemberEngagedAgainAfterFirstSync(t *testing.T) {
	c := newClusters("a", "b")
	f := startFleet(t, c, newRecorder().copyCluster)
	results, err := multicluster.NewResults[string](f.fleet, newAdds())
	require.NoError(t, err)
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	f.members.Synced()
	f.ready(t, "a")
	f.ready(t, "b")
	require.Eventually(t, f.fleet.HasSynced, waitFor, time.Millisecond)
	resultsSynced(t, results)
	hub := cacheName("app", "web")
	results.Set(hub, "a", multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 1})
	require.False(t, results.Reported(hub, []string{"a", "b"}, 1), "b, ready at the first sync, has not reported")
	before, _ := f.fleet.Status("b")

	rotated := c.config("b")
	rotated.BearerToken = "rotated"
	f.members.Set("b", rotated)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("b"); return st.Ready && st.Since.After(before.Since) }, waitFor, time.Millisecond,
		"b engaged again with the new credentials")
	assert.True(t, results.Reported(hub, []string{"a", "b"}, 1), "b, engaged again after the first sync, is still waited for")
}
