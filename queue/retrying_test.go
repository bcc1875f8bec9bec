package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Retrying counts the keys that wait for a retry after a failed reconcile,
// until the retry is due or a later reconcile of the key made it needless.
func TestRetrying(t *testing.T) {
	fail := func() (reconcile.Result, error) { return reconcile.Result{}, errors.New("flaky") }
	tests := []struct {
		name string
		// then is what the reconcile of a second Add of the failed key
		// returns; nil: no second Add.
		then         func() (reconcile.Result, error)
		wantRetrying int
	}{
		{name: "waits for its backoff", wantRetrying: 1},
		{name: "fails again", then: fail, wantRetrying: 1},
		{name: "succeeds meanwhile", then: func() (reconcile.Result, error) { return reconcile.Result{}, nil }},
		{name: "asks for a delay meanwhile", then: func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Hour}, nil }},
		{name: "fails for good meanwhile", then: func() (reconcile.Result, error) {
			return reconcile.Result{}, reconcile.Terminal(errors.New("bad spec"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			c, err := queue.New("retrying", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				if calls.Add(1) == 1 {
					return fail()
				}
				return tt.then()
			}), queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour)))
			require.NoError(t, err)
			assert.Zero(t, c.Retrying(), "before Run")
			stop := startController(t, context.Background(), c)
			// done waits until n reconciles have ended and their outcome is
			// applied.
			done := func(n int32) {
				t.Helper()
				require.Eventually(t, func() bool { return calls.Load() == n && c.Active() == 0 }, waitFor, time.Millisecond)
			}
			c.Add("a")
			done(1)
			require.Equal(t, 1, c.Retrying())
			require.Zero(t, c.Len(), "a key waiting for its retry is not waiting to be reconciled")
			if tt.then != nil {
				c.Add("a")
				done(2)
			}
			assert.Equal(t, tt.wantRetrying, c.Retrying())
			require.NoError(t, stop())
			assert.Zero(t, c.Retrying(), "after Run")
		})
	}
}
