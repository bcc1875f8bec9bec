package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// testOwnership owns the keys in its set; taking a key away cancels its
// claim.
type testOwnership struct {
	mu     sync.Mutex
	owned  map[string]bool
	claims map[string]context.CancelCauseFunc
	q      chan queue.Enqueuer[string]
}

var errMovedAway = errors.New("moved away")

func newTestOwnership(keys ...string) *testOwnership {
	o := &testOwnership{owned: map[string]bool{}, claims: map[string]context.CancelCauseFunc{}, q: make(chan queue.Enqueuer[string], 1)}
	for _, k := range keys {
		o.owned[k] = true
	}
	return o
}

func (o *testOwnership) Start(ctx context.Context, q queue.Enqueuer[string]) {
	o.q <- q
	<-ctx.Done()
}

func (o *testOwnership) Owns(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owned[key]
}

func (o *testOwnership) Claim(ctx context.Context, key string) (context.Context, func(), bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.owned[key] {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	o.claims[key] = cancel
	return ctx, func() {
		o.mu.Lock()
		delete(o.claims, key)
		o.mu.Unlock()
		cancel(nil)
	}, true
}

// set sets whether key is owned; taking it away cancels its claim.
func (o *testOwnership) set(key string, owned bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owned[key] = owned
	if cancel, ok := o.claims[key]; ok && !owned {
		cancel(errMovedAway)
	}
}

func TestOwnership(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	entered := make(chan string, 10)
	release := make(chan struct{})
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		mu.Lock()
		runs[key]++
		mu.Unlock()
		entered <- key
		if key == "held" {
			select {
			case <-release:
			case <-ctx.Done():
				return reconcile.Result{}, context.Cause(ctx)
			}
		}
		return reconcile.Result{}, nil
	})
	own := newTestOwnership("mine", "held", "leaving")
	m := &fakeMetrics{}
	c, err := queue.New("owned", r, queue.WithMetrics(m), queue.WithWorkers(1))
	require.NoError(t, err)
	require.NoError(t, c.Restrict(own))
	stop := startController(t, context.Background(), c)
	q := <-own.q
	require.Same(t, c, q, "the ownership is started with the controller to add keys to")

	// Keys not owned are not queued.
	c.Add("theirs")
	c.AddLowPriority("theirs")
	c.AddAfter("theirs", 0)
	assert.Zero(t, c.Len(), "keys not owned are not queued")
	c.Add("mine")
	require.Equal(t, "mine", <-entered)

	// A waiting key that stops being owned is dropped at its turn.
	c.Add("held")
	require.Equal(t, "held", <-entered)
	c.Add("leaving")
	c.Add("held") // waits behind the running reconcile of held
	own.set("leaving", false)
	require.Empty(t, entered)

	// Taking a claimed key away cancels its reconcile, which is not
	// retried nor counted as an error.
	own.set("held", false)
	require.Eventually(t, func() bool { return c.Active() == 0 && c.Len() == 0 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	close(release)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"mine": 1, "held": 1}, runs, "reconciles by key")
	for _, o := range m.observations() {
		assert.Equal(t, queue.OutcomeSuccess, o.Outcome, "only the reconcile of mine was observed")
	}
	assert.Len(t, m.observations(), 1)
}

// Restrict takes one Ownership, before Run; a refused call changes nothing.
func TestRestrict(t *testing.T) {
	tests := []struct {
		name string
		// restrict is the call under test, on a controller already
		// restricted to an Ownership of "mine" (and running, if running).
		restrict func(c *queue.Controller[string]) error
		running  bool
		wantErr  string
	}{
		{name: "nil", restrict: func(c *queue.Controller[string]) error { return c.Restrict(nil) },
			wantErr: `queue: controller "restricted": Restrict needs an Ownership`},
		{name: "twice", restrict: func(c *queue.Controller[string]) error { return c.Restrict(newTestOwnership("mine", "theirs")) },
			wantErr: `queue: controller "restricted": Restrict called twice`},
		{name: "after Run", running: true, restrict: func(c *queue.Controller[string]) error { return c.Restrict(newTestOwnership("mine", "theirs")) },
			wantErr: `queue: controller "restricted": Restrict called after Run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &keyCounter{}
			c, err := queue.New("restricted", r)
			require.NoError(t, err)
			own := newTestOwnership("mine")
			require.NoError(t, c.Restrict(own))
			var stop func() error
			if tt.running {
				stop = startController(t, context.Background(), c)
				select {
				case <-own.q: // Run has started the Ownership
				case <-time.After(waitFor):
					t.Fatal("Run did not start the Ownership")
				}
			}
			err = tt.restrict(c)
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
			// The first Ownership still decides: theirs is dropped.
			c.Add("theirs")
			c.Add("mine")
			if stop == nil {
				stop = startController(t, context.Background(), c)
			}
			require.Eventually(t, func() bool { return r.count("mine") == 1 && c.Len() == 0 && c.Active() == 0 }, waitFor, time.Millisecond)
			require.NoError(t, stop())
			assert.Zero(t, r.count("theirs"), "a key the first Ownership does not own was reconciled")
		})
	}
	t.Run("after Run returned", func(t *testing.T) {
		c, err := queue.New("restricted", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
		require.NoError(t, err)
		require.NoError(t, startController(t, context.Background(), c)())
		require.EqualError(t, c.Restrict(newTestOwnership()), `queue: controller "restricted": Restrict called after Run`)
	})
}
