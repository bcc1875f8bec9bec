package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Cluster.Queue promises that whenever the cluster is not ready while it
// is this replica's member, "engaged again after failed probes, or with
// new credentials (the keys of its deleted objects, which the next list
// does not show, are kept too)". With new credentials they are not: the
// old engagement's informers run under the attempt's context, a child of
// the engagement's, which the rotation cancels at once, so they stop
// before the drain, and an object deleted while the old engagement
// drains (or before the new one lists) is seen by no informer: its key
// never reaches the controller, and the deletion is never reconciled.
func TestReview3DeletedKeyDuringRotationIsKept(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	f := startFleet(t, c, h.reconcile)
	tracker := c.clients["a"].Tracker()
	cm := configMap("app", "doomed", "a")
	cm.Annotations = map[string]string{"reconciled-for": "a"} // its reconcile writes nothing
	require.NoError(t, tracker.Add(cm))
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Add(configMap("app", "slow", "a")))
	h.waitStarted(t) // the old engagement's drain waits for it

	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	time.Sleep(100 * time.Millisecond)
	close(h.release)
	require.Eventually(t, func() bool { return c.tokenOf("a") == "two" }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return h.count(doomed) == 2 }, 2*time.Second, time.Millisecond,
		"the key of the object deleted while the old credentials' engagement drained is reconciled once the member is ready with the new ones (informer events seen for it: %d)",
		c.saw("a", "app", "doomed"))
}

// The same after failed probes: the keys of objects deleted during the
// drain are kept (TestDeletedKeyOfANonPointerQueueSurvivesTheNextAttempt),
// but once the drain is over the old informers are shut down, and an
// object deleted while the member is retried (its backoff grows to
// minutes) is missing from the next attempt's list without any event: a
// single-cluster informer that reconnects sees it deleted (its relist
// replaces the store), the Fleet, which throws the old cache away, does
// not.
func TestReview3DeletedKeyWhileReengagingAfterFailedProbesIsKept(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	close(h.release)
	f := startFleet(t, c, h.reconcile, multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(100*time.Millisecond))
	tracker := c.clients["a"].Tracker()
	cm := configMap("app", "doomed", "a")
	cm.Annotations = map[string]string{"reconciled-for": "a"} // its reconcile writes nothing
	require.NoError(t, tracker.Add(cm))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)

	c.down["a"].Store(true)
	// Not ready, and an attempt after the drain failed: the informers of
	// the engagement that was ready are shut down.
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready && st.Failures >= 2 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	c.down["a"].Store(false)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return h.count(doomed) == 2 }, 2*time.Second, time.Millisecond,
		"the key of the object deleted while the member was engaged again is reconciled once it is ready (informer events seen for it: %d)",
		c.saw("a", "app", "doomed"))
}
