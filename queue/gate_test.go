package queue_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// testGate is a testOwnership that also reports whether it synced.
type testGate struct {
	*testOwnership
	synced atomic.Bool
}

func (g *testGate) HasSynced() bool { return g.synced.Load() }

// A Gate combines with Restrict: keys run only when both own them; the
// workers and the controller's readiness wait for the gate to sync; a gate
// that closes for a key drops it when its turn comes and cancels its
// reconcile, which is neither retried nor counted.
func TestGate(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	entered := make(chan string, 10)
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		mu.Lock()
		runs[key]++
		mu.Unlock()
		entered <- key
		if key == "held" {
			<-ctx.Done()
			return reconcile.Result{}, context.Cause(ctx)
		}
		return reconcile.Result{}, nil
	})
	m := &fakeMetrics{}
	c, err := queue.New("gated", r, queue.WithMetrics(m), queue.WithWorkers(1))
	require.NoError(t, err)
	require.NoError(t, c.Restrict(newTestOwnership("mine", "held", "waiting", "gated-out")))
	gate := &testGate{testOwnership: newTestOwnership("mine", "held", "waiting", "not-restricted")}
	require.NoError(t, c.Watch(queue.Gated[string](gate)))
	assert.False(t, c.HasSynced(), "the controller is ready before its gate synced")

	c.Add("mine")
	stop := startController(t, context.Background(), c)
	q := <-gate.q
	require.Same(t, c, q, "the gate is started with the controller to add keys to")
	select {
	case key := <-entered:
		t.Fatalf("%s was reconciled before the gate synced", key)
	default:
	}
	gate.synced.Store(true)
	require.Equal(t, "mine", <-entered)
	assert.True(t, c.HasSynced())

	// Keys the gate or the ownership does not own are not queued.
	c.Add("gated-out")
	c.Add("not-restricted")
	assert.Zero(t, c.Len(), "keys not owned by both are not queued")

	// A waiting key the gate closes for is dropped at its turn, and a
	// running one is cancelled.
	c.Add("held")
	require.Equal(t, "held", <-entered)
	c.Add("waiting")
	gate.set("waiting", false)
	gate.set("held", false)
	require.Eventually(t, func() bool { return c.Active() == 0 && c.Len() == 0 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"mine": 1, "held": 1}, runs, "reconciles by key")
	require.Len(t, m.observations(), 1, "only the reconcile of mine was observed")
	assert.Equal(t, queue.OutcomeSuccess, m.observations()[0].Outcome)
}

// Controller.Watch refuses a nil gate and a gate of another key type.
func TestGatedRefused(t *testing.T) {
	c, err := queue.New("gated", &keyCounter{})
	require.NoError(t, err)
	assert.EqualError(t, c.Watch(queue.Gated[string](nil)), `queue: controller "gated": Watch 0: gate must not be nil`)
	err = c.Watch(queue.Gated[int](intGate{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not gate keys of type string")
	assert.EqualError(t, c.Watch(queue.Gated[string](brokenGate{})), `queue: controller "gated": Watch 0: built wrong`)
}

// brokenGate is a gate whose Err says it was built wrong.
type brokenGate struct{ *testGate }

func (brokenGate) Err() error { return errors.New("built wrong") }

type intGate struct{}

func (intGate) Start(ctx context.Context, _ queue.Enqueuer[int]) { <-ctx.Done() }
func (intGate) Owns(int) bool                                    { return true }
func (intGate) HasSynced() bool                                  { return true }
func (intGate) Claim(ctx context.Context, _ int) (context.Context, func(), bool) {
	return ctx, func() {}, true
}
