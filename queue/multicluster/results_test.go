package multicluster_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// adds is a queue.Enqueuer that counts the keys added.
type adds struct {
	mu sync.Mutex
	n  map[cache.ObjectName]int
}

func newAdds() *adds { return &adds{n: map[cache.ObjectName]int{}} }

func (a *adds) Add(k cache.ObjectName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[k]++
}
func (a *adds) AddLowPriority(k cache.ObjectName)            { a.Add(k) }
func (a *adds) AddAfter(k cache.ObjectName, _ time.Duration) { a.Add(k) }

func (a *adds) count(k cache.ObjectName) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[k]
}

// The results of a hub key are kept per member; a changed result adds
// the hub key, an equal one does not; a member that is not ready is
// listed Unreachable with its last result, one that left loses its
// results (adding the hub key), and a result for a member not held is
// dropped.
func TestResults(t *testing.T) {
	c := newClusters("a", "b", "c")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(outageProbeInterval), multicluster.WithSyncTimeout(200*time.Millisecond))
	q := newAdds()
	results, err := multicluster.NewResults[string](f.fleet, q)
	require.NoError(t, err)
	for _, name := range []string{"a", "b", "c"} {
		f.members.Set(name, c.config(name))
	}
	f.members.Synced()
	for _, name := range []string{"a", "b", "c"} {
		f.ready(t, name)
	}
	resultsSynced(t, results)
	hub, other := cacheName("app", "web"), cacheName("app", "db")
	ok := multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 2, Value: "rv-1"}

	results.Set(hub, "a", ok)
	assert.Equal(t, 1, q.count(hub), "a new result adds the hub key")
	results.Set(hub, "b", multicluster.MemberResult[string]{Ready: true, ObservedGeneration: 1, Value: "rv-0"})
	results.Set(other, "a", ok)
	assert.Equal(t, 2, q.count(hub), "a new result adds the hub key")
	assert.Equal(t, 1, q.count(other), "a new result adds its own hub key only")
	results.Set(hub, "a", ok)
	assert.Equal(t, 2, q.count(hub), "an equal result adds nothing")
	changed := ok
	changed.Value = "rv-2"
	results.Set(hub, "a", changed)
	assert.Equal(t, 3, q.count(hub), "a changed result adds the hub key")
	got, kept := results.Get(hub, "a")
	require.True(t, kept)
	assert.Equal(t, "rv-2", got.Value)

	statuses, cond := results.Status(hub, 2, []string{"c", "b", "a", "a"})
	assert.Equal(t, []multicluster.MemberStatus{
		{Cluster: "a", Ready: changed.Ready, Reason: changed.Reason, Message: changed.Message, ObservedGeneration: changed.ObservedGeneration},
		{Cluster: "b", Reason: multicluster.ReasonPending, Message: "generation 2 not applied yet (last applied: 1)", ObservedGeneration: 1},
		{Cluster: "c", Reason: multicluster.ReasonPending, Message: "no result yet"},
	}, statuses)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, multicluster.ReasonMembersNotReady, cond.Reason)
	assert.Equal(t, int64(2), cond.ObservedGeneration)
	assert.False(t, results.Reported(hub, []string{"a", "b", "c"}, 1), "c, ready, has reported nothing")
	assert.True(t, results.Reported(hub, []string{"a", "b"}, 1), "a result of another generation is a report")
	assert.True(t, results.Reported(other, []string{"a"}, 1))

	// A member that stops answering is Unreachable, with its last result.
	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready && st.Err != nil }, waitFor, time.Millisecond)
	statuses, cond = results.Status(hub, 2, []string{"a"})
	require.Len(t, statuses, 1)
	assert.False(t, statuses[0].Ready)
	assert.Equal(t, multicluster.ReasonUnreachable, statuses[0].Reason)
	assert.Contains(t, statuses[0].Message, errDown.Error())
	assert.Equal(t, changed.ObservedGeneration, statuses[0].ObservedGeneration, "the last result is kept while the member is not ready")
	got, kept = results.Get(hub, "a")
	require.True(t, kept, "the last result is kept while the member is not ready")
	assert.Equal(t, "rv-2", got.Value)
	assert.Equal(t, multicluster.ReasonMembersUnreachable, cond.Reason)
	assert.Contains(t, cond.Message, "a (Unreachable: ")
	none := cacheName("app", "none")
	assert.True(t, results.Reported(none, []string{"a"}, 1), "a member not ready does not count")
	assert.True(t, results.Reported(none, []string{"a", "b"}, 1), "a member not ready is written at once, b's first result not waited for")
	assert.False(t, results.Reported(none, []string{"b"}, 1), "b, ready at the first sync, has reported nothing for none")
	assert.True(t, results.Reported(none, []string{"b"}, 0), "a status with no entries has nothing to keep")
	c.down["a"].Store(false)
	f.ready(t, "a")

	// A member that leaves loses its results, and their hub keys are
	// added.
	before, beforeOther := q.count(hub), q.count(other)
	f.members.Delete("a")
	require.Eventually(t, func() bool { _, held := f.fleet.Status("a"); return !held }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return q.count(hub) > before && q.count(other) > beforeOther }, waitFor, time.Millisecond,
		"the hub keys of the results dropped are added")
	_, kept = results.Get(hub, "a")
	assert.False(t, kept, "the results of a member that left are dropped")
	statuses, _ = results.Status(hub, 2, []string{"a"})
	assert.Equal(t, multicluster.ReasonNotHeld, statuses[0].Reason)
	assert.True(t, results.Reported(none, []string{"a"}, 1), "a member not held does not count")

	// A result for a member not held is dropped.
	results.Set(hub, "a", ok)
	_, kept = results.Get(hub, "a")
	assert.False(t, kept, "a result for a member that is not held")

	// A hub key forgotten has no results left.
	results.Forget(hub)
	_, kept = results.Get(hub, "b")
	assert.False(t, kept)
	_, kept = results.Get(other, "b")
	assert.False(t, kept)

	// Every member ready at the generation: Ready.
	results.Set(hub, "b", ok)
	results.Set(hub, "c", ok)
	statuses, cond = results.Status(hub, 2, f.fleet.Members())
	assert.Len(t, statuses, 2)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, multicluster.ReasonAllMembersReady, cond.Reason)
	assert.Equal(t, "2 of 2 members ready", cond.Message)
}

func TestNewResultsValidation(t *testing.T) {
	f := startFleet(t, newClusters(), newRecorder().copyCluster)
	_, err := multicluster.NewResults[string, *member, cache.ObjectName](nil, newAdds())
	assert.Error(t, err)
	_, err = multicluster.NewResults[string, *member, cache.ObjectName](f.fleet, nil)
	assert.Error(t, err)
}

// The overall condition is Ready only when every member is; otherwise it
// names the members that are not, within a bounded length.
func TestAggregate(t *testing.T) {
	ready := func(name string) multicluster.MemberStatus {
		return multicluster.MemberStatus{Cluster: name, Ready: true}
	}
	failed := func(name, reason, msg string) multicluster.MemberStatus {
		return multicluster.MemberStatus{Cluster: name, Reason: reason, Message: msg}
	}
	many := make([]multicluster.MemberStatus, 0, 200)
	for i := range 200 {
		many = append(many, failed(fmt.Sprintf("member-%03d-%s", i, strings.Repeat("x", 200)), "Failed", strings.Repeat("no ", 100)))
	}
	tests := []struct {
		name        string
		entries     []multicluster.MemberStatus
		status      metav1.ConditionStatus
		reason      string
		message     string // exact, if not empty
		contains    []string
		notContains []string
	}{
		{name: "no member", status: metav1.ConditionTrue, reason: multicluster.ReasonAllMembersReady, message: "0 of 0 members ready"},
		{name: "all ready", entries: []multicluster.MemberStatus{ready("a"), ready("b")},
			status: metav1.ConditionTrue, reason: multicluster.ReasonAllMembersReady, message: "2 of 2 members ready"},
		{name: "one failed", entries: []multicluster.MemberStatus{ready("a"), failed("b", "Conflict", "not ours")},
			status: metav1.ConditionFalse, reason: multicluster.ReasonMembersNotReady, message: "1 of 2 members not ready: b (Conflict: not ours)"},
		{name: "one unreachable", entries: []multicluster.MemberStatus{failed("a", multicluster.ReasonPending, "no result yet"), failed("b", multicluster.ReasonUnreachable, "connection refused")},
			status: metav1.ConditionFalse, reason: multicluster.ReasonMembersUnreachable,
			message: "2 of 2 members not ready: a (Pending: no result yet), b (Unreachable: connection refused)"},
		{name: "not held", entries: []multicluster.MemberStatus{failed("a", multicluster.ReasonNotHeld, "not held by this replica")},
			status: metav1.ConditionFalse, reason: multicluster.ReasonMembersUnreachable},
		{name: "many, bounded", entries: many, status: metav1.ConditionFalse, reason: multicluster.ReasonMembersNotReady,
			contains: []string{"200 of 200 members not ready: member-000-", "..."}, notContains: []string{"member-199"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond := multicluster.Aggregate(7, tt.entries)
			assert.Equal(t, multicluster.ConditionReady, cond.Type)
			assert.Equal(t, tt.status, cond.Status)
			assert.Equal(t, tt.reason, cond.Reason)
			assert.Equal(t, int64(7), cond.ObservedGeneration)
			if tt.message != "" {
				assert.Equal(t, tt.message, cond.Message)
			}
			for _, s := range tt.contains {
				assert.Contains(t, cond.Message, s)
			}
			for _, s := range tt.notContains {
				assert.NotContains(t, cond.Message, s)
			}
			assert.LessOrEqual(t, len([]rune(cond.Message)), 1024)
		})
	}
}
