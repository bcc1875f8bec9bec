package multicluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// doc.go: "The informers of such an attempt are new: an object deleted
// while the cluster was not ready is not in their list and reaches no
// handler". Cluster.Queue equates "while no informer of the cluster
// watched" with "while the cluster was not ready". But a member that is
// not ready (its probes failed) keeps its old informers while it drains:
// a deletion then reaches the handlers, is held, and its key is
// reconciled once the member is ready again. The docs promise less than
// the code does (and than TestDeletedKeyOfANonPointerQueueSurvivesTheNextAttempt
// checks), so a user cannot tell which deletions of a not-ready member
// are seen.
func TestReviewDocDeletionWhileNotReadyReachesNoHandler(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](c.see(cl.Name)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	f := runFleet(t, engage, h.reconcile, multicluster.WithClients(c.newClient),
		multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	tracker := c.clients["a"].Tracker()
	cm := configMap("app", "doomed", "a")
	cm.Annotations = map[string]string{"reconciled-for": "a"} // its reconciles write nothing
	require.NoError(t, tracker.Add(cm))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Add(configMap("app", "slow", "a")))
	h.waitStarted(t)

	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
	// The member is not ready: per doc.go, this deletion reaches no
	// handler and its key is not reconciled again.
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	time.Sleep(200 * time.Millisecond)
	close(h.release)
	c.down["a"].Store(false)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, c.saw("a", "app", "doomed"),
		"doc.go says an object deleted while the cluster was not ready reaches no handler; the deletion reached the handler")
	require.Equal(t, 1, h.count(doomed),
		"doc.go says an object deleted while the cluster was not ready reaches no handler; its key was reconciled again")
}
