package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

// Fleet.Run and docs/multicluster.md promise that a stop drains: "those
// in flight run on undisturbed until their controller's shutdown timeout
// ... and are cancelled by it only then (not with ErrLeft)", and that only
// a member that leaves or moves meanwhile is cancelled at once. With
// WithSharding, an operator whose Membership runs on the same context (as
// the docs show) has every reconcile in flight cancelled at once when it
// stops, with ErrLeft: the Membership revokes its claims, which cancels
// the engagements, and every kick of the drain has LeaveUnwanted leave
// the members it no longer owns.
func TestReviewShardedStopCancelsReconcilesAtOnce(t *testing.T) {
	w := &shardedWorld{mgmt: fake.NewClientset(), holding: map[string]string{}, names: []string{"member-0"},
		hold: 3 * time.Second, shutdown: waitFor, workers: 1}
	w.clusters = newClusters(w.names...)
	a := w.start(t, "a")
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.holding["member-0"] == "a"
	}, waitFor, time.Millisecond, "a reconcile is in flight")
	a.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.causes, "reconciles in flight at a normal stop are cancelled (the controller's shutdown timeout is %s)", waitFor)
}
