package shard

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// TestStopWhileRenewalsHangEnds: while the API server hangs every update
// of the Lease, the stop of a replica with nothing to drain ends within the
// timeout of the renewal in flight plus RenewDeadline (docs/design.md: "a
// stop takes no more of the pod's grace period than docs/operator.md
// reserves for it"): a replica revoking its claims sends no renewal after
// the one in flight, not even at once after one that hung for its whole
// timeout, so its leave starts and the stop's deadline with it.
func TestStopWhileRenewalsHangEnds(t *testing.T) {
	client := newHangingClient(t, nil)
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	m, cancel, done := startRun(t, cfg)
	waitUntil(t, done, "joined", m.HasSynced)
	// From now on every update of the Lease hangs (an API server that
	// stopped answering writes); stop once a renewal hangs.
	client.setChooser(func(r sentRequest) reqFate {
		if r.verb == "update" {
			return reqHangs
		}
		return reqAnswered
	})
	waitUntil(t, done, "a renewal hangs", func() bool {
		return client.count(func(r sentRequest) bool { return r.hung && r.ended.IsZero() }) > 0
	})
	start := time.Now()
	cancel()
	write := lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	// The renewal in flight (at most its write timeout), then the
	// leave's requests within RenewDeadline; a few seconds' slack for a
	// loaded machine.
	bound := write + cfg.RenewDeadline
	select {
	case <-done:
		if took := time.Since(start); took > bound+2*time.Second {
			t.Errorf("with nothing to drain, the stop took %s, over the renewal in flight (%s) plus RenewDeadline (%s)", took.Round(time.Millisecond), write, cfg.RenewDeadline)
		}
	case <-time.After(bound + 10*time.Second):
		renewals := client.count(func(r sentRequest) bool { return r.verb == "update" && r.hung && !r.leave && r.sent.After(start) })
		leaves := client.count(func(r sentRequest) bool { return r.leave })
		t.Fatalf("Run has not returned %s after the stop (bound: renewal in flight %s + RenewDeadline %s): %d renewals sent since the stop, each hung for its whole timeout and sent again at once; %d updates publishing that the replica left",
			time.Since(start).Round(time.Millisecond), write, cfg.RenewDeadline, renewals, leaves)
	}
}
