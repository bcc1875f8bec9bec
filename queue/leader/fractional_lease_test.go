package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// refusedAtOnce runs leader.Run with cfg and requires that it refuse the
// Config at once with an error containing want, running nothing.
func refusedAtOnce(t *testing.T, cfg leader.Config, want string) {
	t.Helper()
	r := newRunner(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, cfg, r)
	select {
	case err := <-done:
		require.ErrorContains(t, err, want)
	case <-r.started:
		cancel()
		_ = result(t, done)
		t.Fatalf("Run accepted LeaseDuration %s and led", cfg.LeaseDuration)
	case <-time.After(3 * time.Second):
		cancel()
		err := result(t, done)
		t.Fatalf("Run accepted LeaseDuration %s (it campaigned for 3s and returned %v)", cfg.LeaseDuration, err)
	}
}

// TestFractionalLeaseDurationIsRefused: the Lease records its duration in
// whole seconds (client-go's elector writes int(LeaseDuration /
// time.Second)), and a standby waits what the record says, not its own
// LeaseDuration. With 1.9s the record says 1s: a standby would take over
// while the leader, which gives up only RetryPeriod + RenewDeadline =
// 1.6s after its last renewal, still runs. Run refuses such a Config.
func TestFractionalLeaseDurationIsRefused(t *testing.T) {
	refusedAtOnce(t, leader.Config{Client: fake.NewClientset(), Namespace: ns, Name: lease, Identity: "a",
		LeaseDuration: 1900 * time.Millisecond, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond},
		"whole number of seconds")
}

// TestSubSecondLeaseDurationIsRefused: a LeaseDuration under a second
// would be recorded as 0s, so that every standby finds the Lease expired
// and takes it over from a leader that renews it without fault. Run
// refuses such a Config.
func TestSubSecondLeaseDurationIsRefused(t *testing.T) {
	refusedAtOnce(t, leader.Config{Client: fake.NewClientset(), Namespace: ns, Name: lease, Identity: "a",
		LeaseDuration: 800 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond},
		"whole number of seconds")
}
