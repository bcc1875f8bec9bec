package shard

import (
	"context"
	"testing"
	"time"
)

// TestReviewConfigWithZeroWriteTimeout: Config accepts any RenewDeadline
// above RetryPeriod, but the writes of the replica's Lease are abandoned
// after lease.RequestTimeout = min(LeaseDuration - RenewDeadline,
// (RenewDeadline - RetryPeriod) / 2), which rounds to zero here (a
// difference of 1ns; one of a few milliseconds leaves a real API server
// no more time). Every create fails before it is sent: New accepts the
// Config and Run never joins nor returns an error; it retries the create
// every RetryPeriod until its context ends.
func TestReviewConfigWithZeroWriteTimeout(t *testing.T) {
	client := newHangingClient(t, nil)
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 4 * time.Second, RenewDeadline: time.Second + 1, RetryPeriod: time.Second}
	m, err := New(cfg)
	if err != nil {
		return // refused: fine
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for !m.HasSynced() && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Logf("Run returned %v", err)
			return // gave up with an error: fine
		case <-time.After(20 * time.Millisecond):
		}
	}
	joined := m.HasSynced()
	cancel()
	err = <-done
	if !joined {
		t.Errorf("New accepted LeaseDuration %s, RenewDeadline %s, RetryPeriod %s and the replica never joined in 5s (alone, with an API server that answers at once): %d creates, all failed; Run returned %v",
			cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod, client.count(func(r sentRequest) bool { return r.verb == "create" }), err)
	}
}
