package shard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// A renewal that hangs until its timeout is tried again at once, not
// RetryPeriod after it went: with 20s, 8s, 5s (a RenewDeadline under
// three RetryPeriods, which Config accepts) the hung renewal is abandoned
// after (RenewDeadline-RetryPeriod)/2 = 1.5s and its retry lands within
// the renew deadline, so the replica keeps its Lease and its keys.
func TestHungRenewalRetriedAtOnceKeepsTheKeys(t *testing.T) {
	first := true
	var mu sync.Mutex
	client := newHangingClient(t, nil)
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 20 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: 5 * time.Second}
	m, err := New(cfg)
	require.NoError(t, err)
	g := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{gateKey} }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("Run did not return")
		}
	}()
	keepsClaim(t, done, context.Background(), m.HasSynced, "joining")
	claimCtx, release, ok := g.Claim(context.Background(), gateKey)
	require.True(t, ok, "the only member owns every key")
	release = sync.OnceFunc(release)
	defer release()
	client.setChooser(func(r sentRequest) reqFate {
		mu.Lock()
		defer mu.Unlock()
		if r.verb == "update" && first {
			first = false
			return reqHangs
		}
		return reqAnswered
	})
	deadline := time.Now().Add(45 * time.Second)
	for {
		ended, all := client.hungEnded()
		if all && client.renewedAfter(ended) >= 3 {
			break
		}
		if claimCtx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.NoError(t, claimCtx.Err(), "one hung renewal cost the claim: %v", context.Cause(claimCtx))
	select {
	case err := <-done:
		done <- err
		t.Errorf("Run returned: %v (lost the Lease: %v)", err, errors.Is(err, leader.ErrLeaseLost))
	default:
	}
}
