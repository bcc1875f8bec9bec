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

// Review 62-a: the documented per-member keys operator
// (example_status_test.go, docs/multicluster.md) reports its hub object
// Ready=True ("0 of 0 members ready") when its hub controller runs before
// the Fleet's Provider has reported its members (HasSynced false): at
// every start of the operator, every hub object goes True, then False
// (members NotHeld/Pending), then True again, each a transition with its
// event. Results.Status builds True from an empty member list without
// knowing whether the Fleet knows its members yet.
func TestReview62aHubNotReadyBeforeFleetKnowsMembers(t *testing.T) {
	c := newClusters("a")
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Generation: 1}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus[string]{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus = statuses.write
	web := cacheName("app", "web")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	factory.Start(ctx.Done())
	wg.Go(func() { _ = p.fleet.Run(ctx) })
	wg.Go(func() { _ = p.hub.Run(ctx) })
	// The Provider has not listed its members yet (a Secret informer still
	// syncing): member "a" exists, the Fleet does not know it yet.
	require.Eventually(t, func() bool { return statuses.writesOf(web) > 0 }, waitFor, time.Millisecond, "the hub reconcile writes a status")
	require.False(t, p.fleet.HasSynced())
	_, _, ready := statuses.entry(web, "a")
	assert.NotEqual(t, metav1.ConditionTrue, ready.Status,
		"the hub object is Ready before the Fleet knows its members: %s %s", ready.Reason, ready.Message)
}
