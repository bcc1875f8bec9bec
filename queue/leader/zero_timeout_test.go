package leader_test

import (
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// TestConfigWithZeroRequestTimeoutIsRefused: every Lease request is
// abandoned after at most half of LeaseDuration - RenewDeadline -
// RetryPeriod, which rounds to zero here (a margin of 1ns; one of a few
// milliseconds leaves a real API server no more time). Every request
// would fail before it is sent, and Run would campaign silently until its
// context ended: Run refuses such a Config at once, naming the durations
// to change.
func TestConfigWithZeroRequestTimeoutIsRefused(t *testing.T) {
	refusedAtOnce(t, leader.Config{Client: newLeaseClient(nil), Namespace: ns, Name: lease, Identity: "me",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1750 * time.Millisecond, RetryPeriod: 250*time.Millisecond - 1},
		"lengthen the lease duration")
}
