package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Regression tests for defects of the priority lanes. They drive a
// Controller's queue directly (Get and Done, as the workers do) so that the
// order of hand-outs and the sizes of the internal structures can be checked
// after each step.

func newIdleController(t *testing.T) *Controller[string] {
	t.Helper()
	c, err := New("regression", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	// The queue Run would build; the test plays the workers.
	c.queue, c.delays = newWorkqueue(c.base, c.name, c.rateLimiter, c.metrics, nil)
	t.Cleanup(func() { c.queue.ShutDown() })
	return c
}

// handOut takes the next key and marks it done, as a worker would.
func handOut(t *testing.T, c *Controller[string]) string {
	t.Helper()
	require.Positive(t, c.Len(), "a key should be waiting")
	k, shutdown := c.queue.Get()
	require.False(t, shutdown)
	c.queue.Done(k)
	return k
}

// A fresh add of a key waiting in the low lane must not leave the key's old
// entry behind for good.
func TestPromotionLeavesNoStaleEntries(t *testing.T) {
	c := newIdleController(t)
	for i := range 10_000 {
		k := fmt.Sprint("k", i)
		c.AddLowPriority(k)
		c.Add(k)
		require.Equal(t, k, handOut(t, c))
	}
	s := sizesOf(c)
	assert.Zero(t, c.Len())
	assert.Zero(t, s.Low, "low lane entries after 10,000 promoted keys were served")
	assert.Zero(t, s.Keys, "keys remembered after every key was served")

	// A resync of N objects that all change before they are served.
	const n = 5000
	for i := range n {
		c.AddLowPriority(fmt.Sprint("r", i))
	}
	for i := range n {
		c.Add(fmt.Sprint("r", i))
	}
	for range n {
		handOut(t, c)
	}
	s = sizesOf(c)
	assert.Zero(t, s.Low)
	assert.Zero(t, s.Keys)

	// While a low key keeps waiting, promotions cannot grow the lane beyond
	// a constant.
	c.AddLowPriority("waits")
	for i := range 10_000 {
		k := fmt.Sprint("p", i)
		c.AddLowPriority(k)
		c.Add(k)
		if got := handOut(t, c); got == "waits" { // its share of one in nine
			c.AddLowPriority("waits")
			got = handOut(t, c)
			require.Equal(t, k, got)
		} else {
			require.Equal(t, k, got, "promoted keys are served as fresh ones")
		}
		require.LessOrEqual(t, sizesOf(c).Low, 2*1+65, "low lane entries while one low key waits")
	}
	assert.Equal(t, "waits", handOut(t, c))
	assert.Zero(t, sizesOf(c).Low)
}

// Adds after shutdown leave nothing behind.
func TestAddAfterShutdownLeavesNothing(t *testing.T) {
	c := newIdleController(t)
	c.queue.ShutDown()
	c.AddLowPriority("low")
	c.Add("fresh")
	c.AddLowPriority("fresh")
	assert.Zero(t, c.Len())
	assert.Equal(t, keyQueueSizes{}, sizesOf(c))
}

// A fresh add of a key being processed, followed by a low-priority add of
// the same key, must keep the key in the fresh lane.
func TestFreshAddWhileProcessingIsNotDemoted(t *testing.T) {
	c := newIdleController(t)
	c.Add("a")
	k, _ := c.queue.Get()
	require.Equal(t, "a", k)
	c.AddLowPriority("resync-1")
	c.AddLowPriority("resync-2")
	c.Add("a")            // a real change while a is being reconciled
	c.AddLowPriority("a") // then a resync event for it
	c.queue.Done("a")
	assert.Equal(t, []string{"a", "resync-1", "resync-2"}, []string{handOut(t, c), handOut(t, c), handOut(t, c)})
}

// The low lane's share counts only fresh keys served while low keys were
// waiting: a low key arriving after many fresh ones waits behind the fresh
// keys already queued.
func TestLowShareCountsOnlyWhileLowKeysWait(t *testing.T) {
	c := newIdleController(t)
	for i := range 2 * freshPerLow {
		k := fmt.Sprint("early-", i)
		c.Add(k)
		require.Equal(t, k, handOut(t, c))
	}
	c.Add("fresh-1")
	c.Add("fresh-2")
	c.AddLowPriority("low")
	assert.Equal(t, []string{"fresh-1", "fresh-2", "low"}, []string{handOut(t, c), handOut(t, c), handOut(t, c)})
}
