package operator

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// TestValidateRefusesNegativeLeaderTimings: with --leader-elect, Validate
// asks leader.CheckTimings, documented as "returns an error unless Run
// accepts these durations"; leader.Run refuses a negative retry period or
// renew deadline (client-go's elector needs positive durations), so
// Validate must refuse them too, naming the flags, rather than the
// operator failing only once it runs.
func TestValidateRefusesNegativeLeaderTimings(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{name: "negative retry period",
			args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=-2s"}},
		{name: "negative renew deadline and retry period",
			args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=-1s", "--leader-elect-retry-period=-2s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, Flags{}, tt.args...)
			if err := f.Validate(); err != nil {
				return // refused up front, as it should be
			}
			if err := leader.CheckTimings(f.LeaseDuration, f.RenewDeadline, f.RetryPeriod); err == nil {
				t.Logf("leader.CheckTimings(%s, %s, %s) = nil", f.LeaseDuration, f.RenewDeadline, f.RetryPeriod)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := leader.Run(ctx, leader.Config{Client: fake.NewClientset(), Namespace: "ops", Name: f.LeaderElectID,
				LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod})
			if err != nil {
				t.Errorf("Validate accepted %q, but leader.Run refuses it when the operator runs: %v", tt.args, err)
			}
		})
	}
}
