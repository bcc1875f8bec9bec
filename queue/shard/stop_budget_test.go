package shard

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// TestStopWithHungLeavesWithinRenewDeadline: docs/operator.md tells users
// to give the pod a terminationGracePeriodSeconds longer than
// --shutdown-timeout plus the renew deadline, "so that the Lease is
// released before the kubelet's SIGKILL" (and examples/internal/manifest
// checks deployments against that bound); package leader bounds its
// release retries by RenewDeadline. A sharded replica with nothing to
// drain, whose updates publishing that it left hang, sends up to three
// of them, each allowed the write timeout, with nothing bounding their
// sum: here 3 x 900ms against a RenewDeadline of 2s.
func TestStopWithHungLeavesWithinRenewDeadline(t *testing.T) {
	client := newHangingClient(t, func(r sentRequest) reqFate {
		if r.leave {
			return reqHangs
		}
		return reqAnswered
	})
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	m, cancel, done := startRun(t, cfg)
	waitUntil(t, done, "joined", m.HasSynced)
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
	took := time.Since(start)
	leaves := client.count(func(r sentRequest) bool { return r.leave })
	// The stop's requests are given up RenewDeadline after the leave
	// began; the revocation before it and Run's return after take a
	// moment more on a loaded machine.
	if took > cfg.RenewDeadline+200*time.Millisecond {
		t.Errorf("with nothing to drain, the stop took %s, over the RenewDeadline (%s) a pod's grace period is told to cover: %d updates publishing that the replica left, each allowed %s",
			took.Round(time.Millisecond), cfg.RenewDeadline, leaves, lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod))
	}
}
