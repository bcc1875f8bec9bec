package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigWithZeroWriteTimeoutIsRefused: the writes of the replica's
// Lease are abandoned after lease.RequestTimeout = min(LeaseDuration -
// RenewDeadline, (RenewDeadline - RetryPeriod) / 2), which rounds to zero
// here (a difference of 1ns; one of a few milliseconds leaves a real API
// server no more time). Every create would fail before it is sent and the
// replica would never join: New refuses such a Config, naming the
// durations to change.
func TestConfigWithZeroWriteTimeoutIsRefused(t *testing.T) {
	client := newHangingClient(t, nil)
	for _, cfg := range []Config{
		{LeaseDuration: 4 * time.Second, RenewDeadline: time.Second + 1, RetryPeriod: time.Second},
		{LeaseDuration: 3*time.Second + 50*time.Millisecond, RenewDeadline: 3 * time.Second, RetryPeriod: 40 * time.Millisecond},
	} {
		cfg.Client, cfg.Namespace, cfg.Group, cfg.Identity = client, "ops", "g", "pod-0"
		_, err := New(cfg)
		require.ErrorContains(t, err, "lengthen the renew deadline", "LeaseDuration %s, RenewDeadline %s, RetryPeriod %s", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	}
}
