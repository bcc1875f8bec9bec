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

// TestQuickTimeoutAnswerWaitsForRetryPeriod: only a renewal that hung
// for (nearly) its whole timeout, measured on the membership's monotonic
// clock, is tried again at once; one answered at once with an error is
// tried again when the next renewal is due, RetryPeriod after it went,
// even when the error is a Timeout status. An API server (or a proxy in
// front of it) that answers 504 Timeout at once, here for half a second,
// gets two or three renewals, not a tight loop of them.
func TestQuickTimeoutAnswerWaitsForRetryPeriod(t *testing.T) {
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
