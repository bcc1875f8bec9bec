package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestReviewQuickTimeoutAnswerRetriedInALoop: driver.answered treats every
// renewal that failed with a Timeout or ServerTimeout status (or a
// context.DeadlineExceeded) as one that "hung for its whole timeout" and
// sends the next one at once. docs/design.md and Config.RenewDeadline say
// that only a renewal that hung is retried at once, and one that fails at
// once is retried RetryPeriod after it went. An API server (or a proxy in
// front of it) that answers 504 Timeout at once, here for half a second,
// gets the renewals in a tight loop, with no RetryPeriod between them:
// thousands of Lease updates instead of two or three.
func TestReviewQuickTimeoutAnswerRetriedInALoop(t *testing.T) {
	client := newHangingClient(t, nil)
	var refusing atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refusing.Load() {
			return true, nil, apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
		}
		return false, nil, nil
	})
	r := runTimedMember(t, client)
	keepsClaim(t, r.done, context.Background(), r.m.HasSynced, "joining")
	updates := func() int { return client.count(func(r sentRequest) bool { return r.verb == "update" }) }

	window := 500 * time.Millisecond
	before := updates()
	refusing.Store(true)
	time.Sleep(window)
	refusing.Store(false)
	sent := updates() - before
	require.NoError(t, r.stop())

	rp := timeoutConfig(client, "pod-0").RetryPeriod
	most := int(window/rp) + 2
	if sent > most {
		t.Errorf("%d renewals sent in %s while each was answered at once with a Timeout status; with a RetryPeriod of %s, at most %d", sent, window, rp, most)
	}
}
