package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Reported waits for the first result of the members ready at the
// Fleet's first sync only for a bounded time: a member whose first
// reconcile never reports holds a status back until then, not forever.
func TestReportedWaitIsBounded(t *testing.T) {
	multicluster.SetReportWait(t, 500*time.Millisecond)
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
	hub := cacheName("app", "web")

	results.Set(hub, "a", multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 1})
	assert.True(t, results.Reported(hub, []string{"a"}))
	assert.False(t, results.Reported(hub, []string{"a", "b"}), "b, ready at the first sync, has not reported")
	require.Eventually(t, func() bool { return results.Reported(hub, []string{"a", "b"}) }, waitFor, 10*time.Millisecond,
		"after the bound, b's first result is no longer waited for")
}
