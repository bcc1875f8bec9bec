package queue_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// notOwned is an Ownership that owns a key only once owned is set.
type notOwned struct{ owned atomic.Bool }

func (o *notOwned) Start(ctx context.Context, _ queue.Enqueuer[string]) { <-ctx.Done() }
func (o *notOwned) Owns(string) bool                                    { return o.owned.Load() }
func (o *notOwned) Claim(ctx context.Context, _ string) (context.Context, func(), bool) {
	return ctx, func() {}, o.owned.Load()
}

// A sharded controller (Restrict) drops the adds of keys it does not own,
// and Controller.Trigger (called by every source just before its add)
// drops their triggers too: otherwise a replica's trigger map would grow
// with every key of the other replicas that an event, tick or channel value
// named, never emptied for them, and when such a key later moves to this
// replica, its first reconcile's span would carry the triggers of events
// this replica dropped, perhaps hours old, as its own.
func TestTracingTriggersOfUnownedKeysAreNotKept(t *testing.T) {
	tp, rec := newTracer(t)
	c, err := queue.New("sharded", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	o := &notOwned{}
	require.NoError(t, c.Restrict(o))
	stop := startController(t, context.Background(), c)

	// A source names the key; the add is dropped, not this replica's.
	for range 3 {
		c.Trigger("k", tracing.Trigger{Source: tracing.SourceChannel})
		c.Add("k")
	}
	require.Zero(t, c.Len(), "no add of a key not owned")
	require.Empty(t, rec.Ended(), "no reconcile of a key not owned")

	// The key moves here; the ownership adds it (no trigger of its own).
	o.owned.Store(true)
	c.Add("k")
	s := waitSpans(t, rec, 1)[0]
	require.NoError(t, stop())
	got := attrs(s.Attributes())
	assert.Equal(t, int64(0), got[tracing.AttrTriggers].AsInt64(), "triggers of adds that were dropped are not this reconcile's")
	assert.Empty(t, s.Links())
}
