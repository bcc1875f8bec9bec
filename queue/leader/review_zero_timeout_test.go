package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// TestReviewConfigWithZeroRequestTimeout: Config accepts any LeaseDuration
// above RenewDeadline + RetryPeriod, but every Lease request is abandoned
// after half of LeaseDuration - RenewDeadline - RetryPeriod, which rounds
// to zero here (a margin of 1ns; a margin of a few milliseconds leaves a
// real API server no more time). Every request fails before it is sent:
// Run neither refuses the Config nor ever leads; it campaigns silently
// until its context ends.
func TestReviewConfigWithZeroRequestTimeout(t *testing.T) {
	client := newLeaseClient(nil)
	cfg := leader.Config{Client: client, Namespace: ns, Name: lease, Identity: "me",
		LeaseDuration: 1250*time.Millisecond + 1, RenewDeadline: time.Second, RetryPeriod: 250 * time.Millisecond}
	r := newRunner(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, cfg, r)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run returned nil without leading")
		}
		return // refused: fine
	case <-r.started:
		return // leads: fine
	case <-time.After(5 * time.Second):
	}
	cancel()
	err := result(t, done)
	t.Errorf("Run accepted LeaseDuration %s, RenewDeadline %s, RetryPeriod %s and never led in 5s (alone, with an API server that answers at once): %d Lease requests, all failed; Run returned %v",
		cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, len(client.recorded()), err)
}
