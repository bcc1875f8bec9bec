package multicluster_test

import (
	"context"
	"sync"
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

// docs/multicluster.md: Reported is false "for at most two minutes after
// that sync ... so neither a member whose first reconcile hangs nor one
// that stops answering holds the status back". In the documented
// per-member shape (the snippet, example_status_test.go) the hub
// reconcile that found Reported false returns Result{} and writes
// nothing; the hub key it consumed is never added again when the wait
// ends. Here a and b are the members found at the first sync, the hub
// object holds a status from before the restart (a ApplyFailed, b
// Applied), and b's first reconcile hangs. a's result (Applied) re-queues
// the hub key while b is waited for, and once the wait is over nothing
// writes it: the status keeps saying a failed and b is Applied, however
// long after the bound.
func TestPerMemberStatusWrittenOnceReportWaitEnds(t *testing.T) {
	multicluster.SetReportWait(t, 300*time.Millisecond)
	c := newClusters("a", "b")
	hang := make(chan struct{})
	// b's API server answers /version but never answers a read of a
	// ConfigMap. The members' reconciles share one worker: b is engaged
	// once a's first reconcile has started (b's would hold the worker
	// first, and a never report), and a's read is answered once the
	// Fleet has synced, so that a reports while b is waited for.
	aEntered, synced := make(chan struct{}), make(chan struct{})
	var enterOnce sync.Once
	newClient := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		cl, err := c.newClient(ctx, name, cfg)
		switch {
		case err != nil:
			return cl, err
		case name == "a":
			return hangingClient{Interface: cl, hang: synced, enter: func() { enterOnce.Do(func() { close(aEntered) }) }}, nil
		case name == "b":
			select {
			case <-aEntered:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return hangingClient{Interface: cl, hang: hang}, nil
		}
		return cl, nil
	}
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(newClient),
		multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond),
		multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	web := cacheName("app", "web")
	// The status written before the restart: a had failed, b applied.
	statuses.members[web] = []multicluster.MemberStatus{
		{Cluster: "a", Reason: "ApplyFailed", Message: "from before the restart"},
		{Cluster: "b", Ready: true, Reason: "Applied"},
	}
	statuses.ready[web] = metav1.Condition{Type: multicluster.ConditionReady, Status: metav1.ConditionFalse, Reason: multicluster.ReasonMembersNotReady}

	provider.Set("a", c.config("a"))
	provider.Set("b", c.config("b"))
	provider.Synced()
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.copies, p.hub}, operator.WithInformers(factory))
	t.Cleanup(func() { close(hang) }) // runs before the stop

	require.Eventually(t, p.fleet.HasSynced, waitFor, time.Millisecond)
	close(synced)
	require.Eventually(t, func() bool { _, ok := p.results.Get(web, "a"); return ok }, waitFor, time.Millisecond, "a reported")

	ok := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(10 * time.Millisecond) {
		a, listedA, _ := statuses.entry(web, "a")
		b, listedB, _ := statuses.entry(web, "b")
		ok = listedA && a.Reason == "Applied" && listedB && b.Reason == multicluster.ReasonPending
	}
	a, _, ready := statuses.entry(web, "a")
	b, _, _ := statuses.entry(web, "b")
	require.True(t, ok, "3s after a 300ms report wait, the status says a %q (%s), b %q (%s), condition %s/%s, %d writes: the hub key re-queued by a's result, consumed while b was waited for, is never added again when the wait ends",
		a.Reason, a.Message, b.Reason, b.Message, ready.Status, ready.Reason, statuses.writesOf(web))
}
