package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// TestCheckTimingsAgreesWithRun: CheckTimings returns nil only for
// durations Run accepts (it is what operator flag validation asks), the
// negative and other out-of-range ones included.
func TestCheckTimingsAgreesWithRun(t *testing.T) {
	for _, tt := range []struct {
		name                string
		lease, renew, retry time.Duration
		wantAccepted        bool
	}{
		{name: "defaults", lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, wantAccepted: true},
		{name: "negative retry period", lease: 15 * time.Second, renew: 10 * time.Second, retry: -2 * time.Second},
		{name: "negative renew deadline and retry period", lease: 15 * time.Second, renew: -time.Second, retry: -2 * time.Second},
		{name: "negative renew deadline", lease: 15 * time.Second, renew: -time.Second, retry: 2 * time.Second},
		{name: "negative lease duration", lease: -15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second},
		{name: "renew deadline too short", lease: 15 * time.Second, renew: 2 * time.Second, retry: 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkErr := leader.CheckTimings(tt.lease, tt.renew, tt.retry)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			runErr := leader.Run(ctx, leader.Config{Client: fake.NewClientset(), Namespace: "ops", Name: "x",
				LeaseDuration: tt.lease, RenewDeadline: tt.renew, RetryPeriod: tt.retry})
			if tt.wantAccepted {
				assert.NoError(t, checkErr)
				assert.NoError(t, runErr)
				return
			}
			assert.Error(t, checkErr, "CheckTimings accepts what Run refuses with: %v", runErr)
			assert.Error(t, runErr)
		})
	}
}
