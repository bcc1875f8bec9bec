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

// Cluster.Queue promises that the keys of objects deleted while a member
// is engaged again after failed probes are kept ("which the next list does
// not show"). For a queue that is not a pointer (informer.QueueFunc) the
// next attempt drops the keys its predecessor held, on the ground that its
// informers "list them again": a deleted object's key is not listed again
// and is lost.
func TestReviewDeletedKeyOfANonPointerQueueLostAtTheNextAttempt(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		fn := informer.QueueFunc[multicluster.Key](func(k multicluster.Key) { ctrl.Add(k) })
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(fn)), cache.HandlerOptions{}); err != nil {
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
	cm.Annotations = map[string]string{"reconciled-for": "a"}
	require.NoError(t, tracker.Add(cm))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Add(configMap("app", "slow", "a")))
	h.waitStarted(t)

	// The probes fail; the drain waits for the slow reconcile.
	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	require.Eventually(t, func() bool { return c.saw("a", "app", "doomed") == 2 }, waitFor, time.Millisecond, "the deletion reached the handlers")
	close(h.release)
	c.down["a"].Store(false)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return h.count(doomed) == 2 }, 2*time.Second, time.Millisecond,
		"the key of the object deleted during the drain is reconciled once the member is ready again")
}
