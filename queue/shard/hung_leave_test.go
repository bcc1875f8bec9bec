package shard

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOneHungLeaveIsRetried: a replica that stops normally publishes
// that it left and deletes its Lease, so its keys move at once. When the
// update publishing it hangs until its timeout, it is sent again (as after
// a conflict: it is based on a resourceVersion, so it either lands or
// conflicts with the one that did), up to a bound: one hung request does
// not leave a live member's Lease behind, whose keys would go
// unreconciled until the others count it gone, LeaseDuration later.
func TestOneHungLeaveIsRetried(t *testing.T) {
	var hungOnce atomic.Bool
	client := newHangingClient(t, func(r sentRequest) reqFate {
		if r.leave && hungOnce.CompareAndSwap(false, true) {
			return reqHangs
		}
		return reqAnswered
	})
	r := runTimedMember(t, client)
	keepsClaim(t, r.done, context.Background(), r.m.HasSynced, "joining")
	require.NoError(t, r.stop())
	require.True(t, hungOnce.Load(), "the leave hung")
	l, err := client.Clientset.CoordinationV1().Leases("ops").Get(context.Background(), r.m.Name(), metav1.GetOptions{})
	if err == nil {
		if p, _ := parsePublished(l.Annotations[AnnotationView]); !p.left {
			t.Errorf("after one hung leave, Run returned and left its Lease publishing %q, a live member's: its keys move only after LeaseDuration (%s)",
				l.Annotations[AnnotationView], timeoutConfig(client, "pod-0").LeaseDuration)
		}
	}
}
