package operator

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// TestValidateAcceptsOnlyTimingsTheLeaseProtocolsRun: Validate "reports
// every flag value that cannot work". Lease timings that pass Validate must
// therefore be accepted by leader.Run (with --leader-elect) and by
// shard.New (with --sharded); otherwise the operator fails only once it
// runs, with an error that does not name the flags.
func TestValidateAcceptsOnlyTimingsTheLeaseProtocolsRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{name: "leader: renew deadline not above 1.2 x retry period",
			args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=1800ms"}},
		{name: "leader: request timeout under 100ms",
			args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=900ms"}},
		{name: "sharded: write timeout under 100ms",
			args: []string{"--sharded", "--leader-elect-id=x", "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2950ms", "--leader-elect-retry-period=10ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, Flags{}, tt.args...)
			if err := f.Validate(); err != nil {
				return // refused up front, as it should be
			}
			client := fake.NewClientset()
			var err error
			if f.Sharded {
				_, err = f.Membership(client)
			} else {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err = leader.Run(ctx, leader.Config{Client: client, Namespace: "ops", Name: f.LeaderElectID,
					LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod})
			}
			if err != nil {
				t.Errorf("Validate accepted %q, but the Lease protocol refuses it when the operator runs: %v", tt.args, err)
			}
		})
	}
}
