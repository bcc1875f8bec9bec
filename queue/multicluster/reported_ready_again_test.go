package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Results.Reported: "A member that joins, or becomes ready, after the
// first sync is never waited for (Status lists it Pending until it
// reports)"; docs/multicluster.md: "a member that joins or becomes ready
// later is not waited for". b, ready at the first sync, stops answering
// and becomes ready again: it became ready after the first sync, yet
// Reported still waits for its first result, as for a member found at
// the start.
func TestReportedDoesNotWaitForMemberReadyAgainAfterFirstSync(t *testing.T) {
	c := newClusters("a", "b")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(outageProbeInterval), multicluster.WithSyncTimeout(200*time.Millisecond))
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

	// b stops answering, then becomes ready again.
	c.down["b"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("b"); return !st.Ready }, waitFor, time.Millisecond)
	c.down["b"].Store(false)
	f.ready(t, "b")

	st, _ := f.fleet.Status("b")
	assert.True(t, results.Reported(hub, []string{"a", "b"}, 1),
		"b became ready again after the first sync (ready since %s), and is still waited for", st.Since.Format(time.RFC3339Nano))
}
