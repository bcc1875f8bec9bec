package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

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
	resultsSynced(t, results)
	hub := cacheName("app", "web")

	results.Set(hub, "a", multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 1})
	assert.True(t, results.Reported(hub, []string{"a"}, 1))
	assert.False(t, results.Reported(hub, []string{"a", "b"}, 1), "b, ready at the first sync, has not reported")
	require.Eventually(t, func() bool { return results.Reported(hub, []string{"a", "b"}, 1) }, waitFor, 10*time.Millisecond,
		"after the bound, b's first result is no longer waited for")
}

// The end of Reported's wait adds the hub keys Reported answered false
// for, and only those; a Fleet that stops before the wait ends stops it:
// nothing is added after (and no timer fires after the stop).
func TestReportedWaitEndAddsTheKeysItHeldBack(t *testing.T) {
	for _, stopFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "wait ends", true: "fleet stops first"}[stopFirst], func(t *testing.T) {
			wait := time.Second
			multicluster.SetReportWait(t, wait)
			c := newClusters("a", "b")
			f := startFleet(t, c, newRecorder().copyCluster)
			q := newAdds()
			results, err := multicluster.NewResults[string](f.fleet, q)
			require.NoError(t, err)
			f.members.Set("a", c.config("a"))
			f.members.Set("b", c.config("b"))
			f.members.Synced()
			f.ready(t, "a")
			f.ready(t, "b")
			require.Eventually(t, f.fleet.HasSynced, waitFor, time.Millisecond)
			resultsSynced(t, results)
			held, written, other := cacheName("app", "held"), cacheName("app", "new"), cacheName("app", "other")
			require.False(t, results.Reported(held, []string{"a", "b"}, 1), "nobody reported yet")
			require.True(t, results.Reported(written, []string{"a", "b"}, 0), "no entries: nothing to keep")
			if stopFirst {
				require.NoError(t, f.stop())
				n := q.count(held) // 0 unless the machine took longer than the wait to get here
				assert.Never(t, func() bool { return q.count(held) > n }, wait+wait/2, 10*time.Millisecond, "an add after the Fleet stopped")
				return
			}
			require.Eventually(t, func() bool { return q.count(held) == 1 }, waitFor, time.Millisecond, "the held-back key is added when the wait ends")
			assert.True(t, results.Reported(held, []string{"a", "b"}, 1), "the wait is over")
			assert.Zero(t, q.count(written)+q.count(other), "keys Reported did not hold back are not added")
		})
	}
}

// resultsSynced waits until results has seen the Fleet's first sync,
// which it learns a moment after HasSynced turns true: until then
// Reported is false for any status with entries (the key, here one of its
// own, is added again at the sync).
func resultsSynced(t *testing.T, results *multicluster.Results[cache.ObjectName, string]) {
	t.Helper()
	probe := cacheName("app", "probe-of-the-sync")
	require.Eventually(t, func() bool { return results.Reported(probe, nil, 1) }, waitFor, time.Millisecond, "Results never saw the Fleet's first sync")
}
