package multicluster_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// With the seeding gone nothing needs the caches of an attempt that is
// over, yet a member that stopped answering keeps the value of its last
// ready attempt (member.value, which Get and Claim no longer hand out
// while it is not ready) for as long as its attempts fail, up to hours
// with a 5m backoff: the value holds the listers, so the whole old caches
// of the member stay in memory, as the seeding's kept factories did.
func TestOldAttemptsValueIsNotKeptWhileNotReady(t *testing.T) {
	c := newClusters("a")
	var mu sync.Mutex
	var first weak.Pointer[member]
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		m := &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}
		mu.Lock()
		if first.Value() == nil {
			first = weak.Make(m)
		}
		mu.Unlock()
		return m, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient),
		multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(50*time.Millisecond))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")

	// It stops answering: drained, its informers shut down, and every
	// attempt since fails.
	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready && st.Failures >= 2 }, waitFor, time.Millisecond)
	_, ok := f.fleet.Get("a")
	require.False(t, ok)
	gone := func() bool {
		runtime.GC()
		mu.Lock()
		defer mu.Unlock()
		return first.Value() == nil
	}
	require.Eventually(t, gone, 2*time.Second, 50*time.Millisecond,
		"the value (listers, caches) of the member's last ready attempt is still reachable while the member is not ready and cannot be handed out")
	c.down["a"].Store(false)
}
