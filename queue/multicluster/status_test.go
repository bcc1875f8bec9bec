package multicluster_test

import (
	"context"
	"errors"
	"strings"
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
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// hubStatuses keeps the last status the propagator wrote of each source,
// and how many times it wrote one.
type hubStatuses struct {
	mu      sync.Mutex
	members map[cache.ObjectName][]multicluster.MemberStatus
	ready   map[cache.ObjectName]metav1.Condition
	writes  map[cache.ObjectName]int
}

func (h *hubStatuses) write(_ context.Context, src *corev1.ConfigMap, members []multicluster.MemberStatus, ready metav1.Condition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := cache.MetaObjectToName(src)
	h.members[key], h.ready[key] = members, ready
	h.writes[key]++
	return nil
}

// entry returns the status of cluster in the last status of key, and the
// condition.
func (h *hubStatuses) entry(key cache.ObjectName, cluster string) (multicluster.MemberStatus, bool, metav1.Condition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.members[key] {
		if e.Cluster == cluster {
			return e, true, h.ready[key]
		}
	}
	return multicluster.MemberStatus{}, false, h.ready[key]
}

// written is the propagator's written: how many member entries the last
// status of src has.
func (h *hubStatuses) written(src *corev1.ConfigMap) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.members[cache.MetaObjectToName(src)])
}

func (h *hubStatuses) writesOf(key cache.ObjectName) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes[key]
}

// A fleet operator of the per-member keys shape, on a real Fleet of fake
// members: members join, become ready, stop answering and leave, and the
// status of the hub object lists each member as it stands (one its
// Provider refused too, Unreachable), with one Ready condition over all, re-queued by the member changes and the results
// alone.
func TestAggregatedStatusAcrossMembers(t *testing.T) {
	c := newClusters("a", "b", "c")
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(c.newClient),
		multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond),
		multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	web := cacheName("app", "web")

	provider.Set("a", c.config("a"))
	provider.Set("b", c.config("b"))
	provider.Synced()
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.copies, p.hub}, operator.WithInformers(factory))

	// state waits until cluster's entry in web's status has reason (and
	// the condition cond), and returns the entry.
	state := func(step, cluster, reason string, cond string) multicluster.MemberStatus {
		t.Helper()
		require.Eventually(t, func() bool {
			e, ok, ready := statuses.entry(web, cluster)
			return ok && e.Reason == reason && ready.Reason == cond
		}, waitFor, time.Millisecond, "%s: %s is %s, the condition %s", step, cluster, reason, cond)
		e, _, _ := statuses.entry(web, cluster)
		return e
	}
	gone := func(step, cluster string) {
		t.Helper()
		require.Eventually(t, func() bool { _, ok, _ := statuses.entry(web, cluster); return !ok }, waitFor, time.Millisecond, "%s: %s is not listed", step, cluster)
	}

	a := state("joined", "a", "Applied", multicluster.ReasonAllMembersReady)
	state("joined", "b", "Applied", multicluster.ReasonAllMembersReady)
	cp, err := c.clients["a"].CoreV1().ConfigMaps("app").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	held, ok := p.results.Get(web, "a")
	require.True(t, ok)
	assert.Equal(t, cp.ResourceVersion, held.Value, "what the member holds")
	assert.True(t, a.Ready)

	writes := statuses.writesOf(web)
	provider.Set("c", c.config("c"))
	state("c joins", "c", "Applied", multicluster.ReasonAllMembersReady)
	assert.Greater(t, statuses.writesOf(web), writes, "the hub key is re-queued by the join")

	c.down["b"].Store(true)
	b := state("b stops answering", "b", multicluster.ReasonUnreachable, multicluster.ReasonMembersUnreachable)
	assert.False(t, b.Ready)
	// Between the failed probes and the next failed attempt, b may be
	// listed "not engaged yet"; then with the error.
	require.Eventually(t, func() bool {
		e, _, _ := statuses.entry(web, "b")
		return strings.Contains(e.Message, errDown.Error())
	}, waitFor, time.Millisecond, "b is listed with why it is unreachable")
	_, _, ready := statuses.entry(web, "b")
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "b (Unreachable: ")
	c.down["b"].Store(false)
	state("b answers again", "b", "Applied", multicluster.ReasonAllMembersReady)

	provider.Delete("a")
	gone("a leaves", "a")
	require.Eventually(t, func() bool { _, kept := p.results.Get(web, "a"); return !kept }, waitFor, time.Millisecond, "a's result is dropped")

	provider.Refuse("c", errors.New("kubeconfig not allowed"))
	refused := state("c refused", "c", multicluster.ReasonUnreachable, multicluster.ReasonMembersUnreachable)
	assert.False(t, refused.Ready, "a refused member holds nothing")
	assert.Contains(t, refused.Message, "kubeconfig not allowed")
	_, _, ready = statuses.entry(web, "b")
	assert.Equal(t, metav1.ConditionFalse, ready.Status, "not Ready while a member is refused")

	// Quiet, once c has left (its results dropped, the last step): no
	// change, no write.
	require.Eventually(t, func() bool { _, kept := p.results.Get(web, "c"); return !kept }, waitFor, time.Millisecond, "c's result is dropped")
	queuetest.WaitIdle(t, p.hub)
	queuetest.WaitIdle(t, p.copies)
	// The last member change may still be on its way: settled once the
	// writes stopped for a while.
	last, since := -1, time.Now()
	require.Eventually(t, func() bool {
		if w := statuses.writesOf(web); w != last {
			last, since = w, time.Now()
		}
		return time.Since(since) > 100*time.Millisecond
	}, waitFor, 5*time.Millisecond)
	writes = statuses.writesOf(web)
	assert.Never(t, func() bool { return statuses.writesOf(web) > writes }, 200*time.Millisecond, 10*time.Millisecond,
		"the hub key is not re-queued while nothing changes")
}
