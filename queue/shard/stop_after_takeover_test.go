package shard

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// TestStopAfterTakeoverWithinBudget: docs/design.md says a stop with
// nothing to drain "ends within that renewal's timeout plus RenewDeadline
// even while the API server hangs every update of the Lease", and that a
// stop "takes no more of the pod's grace period than docs/operator.md
// reserves for it" (--shutdown-timeout + renew deadline + the timeout of a
// renewal in flight). A replica that took over the Lease of a former
// process of its identity and is stopped during its hold (it claims
// nothing then: nothing to drain) first waits out the hold, up to
// RenewDeadline, and only then starts the leave and its RenewDeadline
// budget: the stop takes up to 2 x RenewDeadline.
func TestStopAfterTakeoverWithinBudget(t *testing.T) {
	client := newHangingClient(t, nil, formerLease("pod-0", time.Now()))
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 12 * time.Second, RenewDeadline: 9 * time.Second, RetryPeriod: 500 * time.Millisecond}
	m, cancel, done := startRun(t, cfg)
	// Wait until the first write after the takeover came back: the hold
	// (no claim before RenewDeadline after it) has begun.
	waitUntil(t, done, "the takeover's first write came back", func() bool {
		var hold bool
		m.withCore(func(c *core) { hold = c.takeover && c.hold > 0 })
		return hold
	})
	// From now on every update of the Lease hangs.
	client.setChooser(func(r sentRequest) reqFate {
		if r.verb == "update" {
			return reqHangs
		}
		return reqAnswered
	})
	start := time.Now()
	cancel()
	write := lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	bound := write + cfg.RenewDeadline
	select {
	case err := <-done:
		if took := time.Since(start); took > bound+2*time.Second {
			t.Errorf("with nothing to drain (in the takeover's hold), the stop took %s, over the renewal in flight (%s) plus RenewDeadline (%s) = %s; Run returned %v",
				took.Round(time.Millisecond), write, cfg.RenewDeadline, bound, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the stop")
	}
}
