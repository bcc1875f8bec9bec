package multicluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// A member its Provider refused (a Secret with a kubeconfig that is not
// allowed) holds nothing of the hub object: with the call the docs show,
// Status(key, generation, fleet.Members()), it is listed Unreachable with
// the refusal, and the condition is not True.
func TestRefusedMemberListedInStatus(t *testing.T) {
	c := newClusters("a", "b")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	q := newAdds()
	results, err := multicluster.NewResults[string](f.fleet, q)
	require.NoError(t, err)
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	f.members.(multicluster.Refuser).Refuse("b", errors.New("kubeconfig not allowed"))
	st, held := f.fleet.Status("b")
	require.True(t, held)
	require.Error(t, st.Err, "the Fleet knows b is refused")

	hub := cacheName("app", "web")
	results.Set(hub, "a", multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: 1})

	assert.Equal(t, []string{"a", "b"}, f.fleet.Members(), "Members lists the refused member")
	statuses, cond := results.Status(hub, 1, f.fleet.Members())
	var names []string
	for _, e := range statuses {
		names = append(names, e.Cluster)
	}
	require.Contains(t, names, "b", "the refused member is listed (Unreachable, with the Provider's error)")
	assert.Equal(t, multicluster.MemberStatus{Cluster: "b", Reason: multicluster.ReasonUnreachable, Message: st.Err.Error()}, statuses[1])
	assert.Equal(t, metav1.ConditionFalse, cond.Status, "the condition is not True while a member is refused: %s", cond.Message)
}
