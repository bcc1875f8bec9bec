package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// No goroutine Run started is left once Run returns, however it ends:
// Run and cancel, many times over, each checked with goleak.
func TestRunLeavesNoGoroutine(t *testing.T) {
	tests := []struct {
		name string
		// beforeSync cancels Run before its caches sync; otherwise its
		// first reconcile does.
		beforeSync bool
		wantErr    error
	}{
		{name: "cancelled before the caches synced", beforeSync: true, wantErr: context.Canceled},
		{name: "stopped after a reconcile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			for range 200 {
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
				c, err := queue.New("leak", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
					cancel()
					return reconcile.Result{RequeueAfter: time.Hour}, nil
				}))
				require.NoError(t, err)
				if tt.beforeSync {
					require.NoError(t, c.Watch(queue.On(typed(&fakeInformer{}), noopHandler)))
					cancel()
				} else {
					c.Add("a")
				}
				c.AddAfter("later", time.Hour) // a key for the delaying goroutine
				err = c.Run(ctx)
				cancel()
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				} else {
					require.NoError(t, err)
				}
				goleak.VerifyNone(t, ignore)
				if t.Failed() {
					return
				}
			}
		})
	}
}
