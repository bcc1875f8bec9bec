package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A reconcile that meets a cache behind the controller's own write is not
// a failure (the queue counts it as a requeue, not an error, and logs it at
// V(4)); its span is not marked failed either, so span-based error rates
// and trace UIs do not show quiet stale-cache requeues as failed
// reconciles.
func TestTracingStaleCacheIsNotAFailedSpan(t *testing.T) {
	tp, rec := newTracer(t)
	calls := 0
	c, err := queue.New("stale", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		calls++
		if calls == 1 {
			return reconcile.Result{}, reconcile.StaleCache(errors.New("the cache is behind this controller's last write"))
		}
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp), queue.WithRateLimiter(fastRetries()))
	require.NoError(t, err)
	c.Add("ns/a")
	stop := startController(t, context.Background(), c)
	spans := waitSpans(t, rec, 2)
	require.NoError(t, stop())
	s := spans[0]
	require.Equal(t, tracing.ResultStale, attrs(s.Attributes())[tracing.AttrResult].AsString())
	assert.NotEqual(t, codes.Error, s.Status().Code, "a quiet stale-cache requeue is marked as a failure: %q", s.Status().Description)
}
