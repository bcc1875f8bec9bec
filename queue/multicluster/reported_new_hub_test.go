package multicluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// docs/multicluster.md, of the per-member shape: "a hub object whose
// status has no entries yet has nothing to keep, and is written whatever
// Reported says". The documented reconcile (the snippet,
// example_status_test.go) writes nothing whenever Reported is false: a
// source created after the operator started, while a member found at the
// start has not reported (its first reconcile hangs), gets no status at
// all, for the whole wait (two minutes), and, the wait over, none until
// something re-queues it.
func TestPerMemberNewHubObjectWrittenWhileReportedWaits(t *testing.T) {
	c := newClusters("a", "b")
	hang := make(chan struct{})
	newClient := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		cl, err := c.newClient(ctx, name, cfg)
		if err != nil || name != "b" {
			return cl, err
		}
		return hangingClient{Interface: cl, hang: hang}, nil
	}
	mgmt := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(newClient),
		multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond),
		multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	provider.Set("a", c.config("a"))
	provider.Set("b", c.config("b"))
	provider.Synced()
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.copies, p.hub}, operator.WithInformers(factory))
	t.Cleanup(func() { close(hang) }) // runs before the stop
	require.Eventually(t, p.fleet.HasSynced, waitFor, time.Millisecond)

	// A new source: no status yet, nothing to keep.
	_, err = mgmt.CoreV1().ConfigMaps("app").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	web := cacheName("app", "web")
	require.Eventually(t, func() bool { _, ok := p.results.Get(web, "a"); return ok }, waitFor, time.Millisecond, "a reported")
	ok := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(10 * time.Millisecond) {
		ok = statuses.writesOf(web) > 0
	}
	require.True(t, ok, "3s after a reported on the new source %s, its status was never written (b, found at the start, has not reported)", web)
}
