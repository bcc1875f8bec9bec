package multicluster_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Review 62-a: with WithSharding, every member is ready on the replica
// that holds it and has reported a Ready result there, yet no replica can
// build a True Ready condition for the hub object: each lists the other
// replica's members NotHeld, so the condition is False
// (MembersUnreachable) on every replica, forever, and the hub object's
// status depends on which replica wrote it last. The docs say a replica
// "lists the others NotHeld" but not that the recipe they show cannot
// work on a sharded Fleet.
func TestReview62aShardedFleetHubNeverReady(t *testing.T) {
	w := &shardedWorld{mgmt: fake.NewClientset(), holding: map[string]string{}}
	for i := range 4 {
		w.names = append(w.names, fmt.Sprintf("member-%d", i))
	}
	w.clusters = newClusters(w.names...)
	a := w.start(t, "a")
	b := w.start(t, "b")
	require.Eventually(t, func() bool {
		ca, cb := a.fleet.Clusters(), b.fleet.Clusters()
		all := slices.Sorted(slices.Values(append(slices.Clone(ca), cb...)))
		return len(ca) > 0 && len(cb) > 0 && slices.Equal(all, w.names)
	}, waitFor, 20*time.Millisecond, "the replicas divide the clusters")
	require.Eventually(t, func() bool {
		for _, name := range w.names {
			sa, _ := a.fleet.Status(name)
			sb, _ := b.fleet.Status(name)
			if !sa.Ready && !sb.Ready {
				return false
			}
		}
		return true
	}, waitFor, 20*time.Millisecond, "every member is ready on one replica")

	hub := cacheName("app", "web")
	ra, err := multicluster.NewResults[string](a.fleet, newAdds())
	require.NoError(t, err)
	rb, err := multicluster.NewResults[string](b.fleet, newAdds())
	require.NoError(t, err)
	ok := multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 1}
	for _, name := range a.fleet.Clusters() {
		ra.Set(hub, name, ok)
	}
	for _, name := range b.fleet.Clusters() {
		rb.Set(hub, name, ok)
	}

	_, condA := ra.Status(hub, 1, a.fleet.Members())
	_, condB := rb.Status(hub, 1, b.fleet.Members())
	t.Logf("replica a: %s %s: %s", condA.Status, condA.Reason, condA.Message)
	t.Logf("replica b: %s %s: %s", condB.Status, condB.Reason, condB.Message)
	assert.True(t, condA.Status == metav1.ConditionTrue || condB.Status == metav1.ConditionTrue,
		"every member is Ready at generation 1, yet no replica reports the hub object Ready")
}
