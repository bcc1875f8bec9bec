package queue_test

import (
	"context"
	"errors"
	"slices"
	"sync"
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
			}), queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Hour, time.Hour)))
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

// stubLimiter is a rate limiter of any keys, as WithRateLimiter takes: it
// answers every When with delay and records the keys it is given.
type stubLimiter struct {
	delay   time.Duration
	mu      sync.Mutex
	whens   []any
	forgets []any
}

func (s *stubLimiter) When(key any) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.whens = append(s.whens, key)
	return s.delay
}

func (s *stubLimiter) Forget(key any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgets = append(s.forgets, key)
}

func (s *stubLimiter) NumRequeues(key any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.whens {
		if k == key {
			n++
		}
	}
	return n
}

// calls returns the keys When and Forget were given.
func (s *stubLimiter) calls() (whens, forgets []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.whens), slices.Clone(s.forgets)
}

// The rate limiter given with WithRateLimiter, one of any keys, decides the
// retry delays of a controller of string keys: it is asked once per failure,
// with the key itself, and the key is retried no earlier than it says (the
// default limiter would retry after DefaultBaseDelay).
func TestWithRateLimiterDecidesRetryDelays(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
		// retried: the retry is expected while the test runs.
		retried bool
	}{
		{name: "no delay", delay: 0, retried: true},
		{name: "a delay well above the default", delay: 30 * queue.DefaultBaseDelay, retried: true},
		{name: "an hour", delay: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var started []time.Time
			r := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				started = append(started, time.Now())
				if len(started) == 1 {
					return reconcile.Result{}, errors.New("flaky")
				}
				return reconcile.Result{}, nil
			})
			runs := func() []time.Time {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(started)
			}
			limiter := &stubLimiter{delay: tt.delay}
			c, err := queue.New("limited", r, queue.WithRateLimiter(limiter))
			require.NoError(t, err)
			stop := startController(t, context.Background(), c)
			c.Add("ns/a")
			if tt.retried {
				require.Eventually(t, func() bool { return len(runs()) == 2 && c.Active() == 0 }, waitFor, time.Millisecond)
				got := runs()
				assert.GreaterOrEqual(t, got[1].Sub(got[0]), tt.delay, "the retry came before the limiter's delay")
				assert.Zero(t, c.Retrying())
			} else {
				require.Eventually(t, func() bool { return c.Retrying() == 1 && c.Active() == 0 }, waitFor, time.Millisecond)
				assert.Zero(t, c.Len(), "the key waits for the limiter's delay")
			}
			require.NoError(t, stop())
			whens, forgets := limiter.calls()
			assert.Equal(t, []any{"ns/a"}, whens, "When is asked once, with the key")
			if tt.retried {
				assert.Equal(t, []any{"ns/a"}, forgets, "the success after the retry forgets the key")
				assert.Len(t, runs(), 2, "reconciles")
			} else {
				assert.Empty(t, forgets)
				assert.Len(t, runs(), 1, "reconciles")
			}
		})
	}
}

// One limiter type serves controllers of every key type: the keys reach it
// as they are.
func TestWithRateLimiterOfAnyKeyType(t *testing.T) {
	limiter := &stubLimiter{}
	var calls atomic.Int32
	c, err := queue.New("int-keys", reconcile.Func[int](func(context.Context, int) (reconcile.Result, error) {
		if calls.Add(1) == 1 {
			return reconcile.Result{}, errors.New("flaky")
		}
		return reconcile.Result{}, nil
	}), queue.WithRateLimiter(limiter))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	c.Add(7)
	require.Eventually(t, func() bool { return calls.Load() == 2 && c.Active() == 0 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	whens, forgets := limiter.calls()
	assert.Equal(t, []any{7}, whens)
	assert.Equal(t, []any{7}, forgets)
}
