package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// The documented per-member keys operator does not report its hub object
// Ready while the Fleet's Provider has not listed its members yet
// (HasSynced false): the condition is not True from an empty or partial
// member list, which would make every hub object go True, False, True at
// each start of the operator, each a transition with its event.
func TestHubNotReadyBeforeFleetKnowsMembers(t *testing.T) {
	c := newClusters("a")
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Generation: 1}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	web := cacheName("app", "web")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	factory.Start(ctx.Done())
	wg.Go(func() { _ = p.fleet.Run(ctx) })
	wg.Go(func() { _ = p.hub.Run(ctx) })
	wg.Go(func() { _ = p.copies.Run(ctx) })
	// The Provider has not listed its members yet (a Secret informer still
	// syncing): member "a" exists, the Fleet does not know it yet.
	require.Eventually(t, func() bool { return statuses.writesOf(web) > 0 }, waitFor, time.Millisecond, "the hub reconcile writes a status")
	require.False(t, p.fleet.HasSynced())
	_, _, ready := statuses.entry(web, "a")
	assert.NotEqual(t, metav1.ConditionTrue, ready.Status,
		"the hub object is Ready before the Fleet knows its members: %s %s", ready.Reason, ready.Message)
	assert.Equal(t, metav1.ConditionUnknown, ready.Status)
	assert.Equal(t, multicluster.ReasonFleetNotSynced, ready.Reason)

	// Once the Fleet knows its members, the status is theirs.
	provider.Set("a", c.config("a"))
	provider.Synced()
	require.Eventually(t, func() bool {
		e, ok, ready := statuses.entry(web, "a")
		return ok && e.Ready && ready.Status == metav1.ConditionTrue
	}, waitFor, time.Millisecond, "the hub object is Ready once the Fleet synced and a holds it")
}

// A hub key whose status was built before the Fleet synced (Unknown,
// FleetNotSynced) is added to the hub controller when the Fleet syncs,
// with no other event: its next status is the members'.
func TestResultsAddWaitingHubKeysWhenFleetSyncs(t *testing.T) {
	c := newClusters("a")
	f := startFleet(t, c, newRecorder().copyCluster)
	q := newAdds()
	results, err := multicluster.NewResults[string](f.fleet, q)
	require.NoError(t, err)
	hub := cacheName("app", "web")

	_, cond := results.Status(hub, 1, f.fleet.Members())
	assert.Equal(t, metav1.ConditionUnknown, cond.Status)
	assert.Equal(t, multicluster.ReasonFleetNotSynced, cond.Reason)
	assert.Zero(t, q.count(hub))

	f.members.Set("a", c.config("a"))
	f.members.Synced()
	require.Eventually(t, func() bool { return q.count(hub) == 1 }, waitFor, time.Millisecond, "the hub key is added when the fleet syncs")
	require.True(t, f.fleet.HasSynced())
	_, cond = results.Status(hub, 1, f.fleet.Members())
	assert.Equal(t, metav1.ConditionFalse, cond.Status, "a is Pending: %s", cond.Message)
	assert.Equal(t, multicluster.ReasonMembersNotReady, cond.Reason)

	// Once synced, a Results made later does not wait.
	later, err := multicluster.NewResults[string](f.fleet, q)
	require.NoError(t, err)
	_, cond = later.Status(cacheName("app", "other"), 1, nil)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
}
