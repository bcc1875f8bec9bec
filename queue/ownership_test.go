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
	c, err := queue.New("owned", r, queue.WithOwnership[string](own), queue.WithMetrics(m), queue.WithWorkers(1))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	q := <-own.q
	require.Same(t, c, q, "the ownership is started as a source of the controller")

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

func TestOwnershipKeyType(t *testing.T) {
	_, err := queue.New("wrong", reconcile.Func[int](func(context.Context, int) (reconcile.Result, error) { return reconcile.Result{}, nil }),
		queue.WithOwnership[string](newTestOwnership()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not for keys of type int")
	_, err = queue.New("nil", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil }),
		queue.WithOwnership[string](nil))
	require.ErrorContains(t, err, "ownership is nil")
}
