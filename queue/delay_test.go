package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

const waitFor = 10 * time.Second

// retryCounter counts the workqueue retries metric.
type retryCounter struct {
	NoopMetrics
	n atomic.Int64
}

func (r *retryCounter) NewRetriesMetric(string) workqueue.CounterMetric { return r }
func (r *retryCounter) Inc()                                            { r.n.Add(1) }

// pending returns, for each key waiting in q, how long after start its
// retry and its delay are due (zero: none).
func (q *delayQueue[K]) pending(start time.Time) map[K][2]time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[K][2]time.Duration{}
	since := func(at time.Time) time.Duration {
		if at.IsZero() {
			return 0
		}
		return at.Sub(start)
	}
	for k, e := range q.entries {
		out[k] = [2]time.Duration{since(e.retryAt), since(e.delayAt)}
	}
	return out
}

func TestDelayQueue(t *testing.T) {
	defer goleak.VerifyNone(t)
	start := time.Unix(1_000_000, 0)
	clk := clocktesting.NewFakeClock(start)
	base := newKeyQueue[string]("", NoopMetrics{}, nil, nil)
	metrics := &retryCounter{}
	q := newDelayQueue[string](base, "delays", metrics, clk)
	// step moves the clock and waits until want keys wait in the base queue.
	step := func(d time.Duration, want int) {
		t.Helper()
		clk.Step(d)
		require.Eventually(t, func() bool { return base.Len() == want }, waitFor, time.Millisecond, "keys due after %s", clk.Since(start))
	}
	type due = [2]time.Duration // retry, delay

	q.AddAfter("now", 0)
	q.addRetry("again", -time.Second)
	assert.Equal(t, 2, base.Len(), "no delay: added at once")

	q.AddAfter("d", 2*time.Second)
	q.AddAfter("d", 3*time.Second) // the earliest time counts
	q.addRetry("r", 3*time.Second)
	q.addRetry("r", time.Second)
	q.addRetry("r", 2*time.Second)
	assert.Equal(t, map[string]due{"d": {0, 2 * time.Second}, "r": {time.Second, 0}}, q.pending(start))
	assert.Equal(t, 1, q.Retrying())
	step(time.Second, 3)
	assert.Zero(t, q.Retrying(), "the retry is due")
	step(time.Second, 4)
	assert.Empty(t, q.pending(start))

	// A key waits once, when the earlier of its retry and its delay is due.
	start = clk.Now()
	q.AddAfter("both", time.Second)
	q.addRetry("both", 5*time.Second)
	assert.Equal(t, map[string]due{"both": {5 * time.Second, time.Second}}, q.pending(start))
	assert.Equal(t, 1, q.Retrying(), "a retry served by an earlier delay still counts until then")
	step(time.Second, 5)
	assert.Zero(t, q.Retrying())
	assert.Empty(t, q.pending(start), "both end when the key is added")

	// Forgetting a retry keeps a delay of the same key.
	start = clk.Now()
	q.addRetry("k", time.Second)
	q.AddAfter("k", 3*time.Second)
	q.addRetry("gone", time.Second)
	assert.Equal(t, 2, q.Retrying())
	q.forgetRetry("k")
	q.forgetRetry("k")
	q.forgetRetry("gone")
	q.forgetRetry("unknown")
	assert.Zero(t, q.Retrying())
	assert.Equal(t, map[string]due{"k": {0, 3 * time.Second}}, q.pending(start))
	step(3*time.Second, 6)

	// Keys are added in the order they are due.
	var want []string
	delays := rand.Perm(50)
	for i, d := range delays {
		q.AddAfter(fmt.Sprint("p", i), time.Duration(d+1)*time.Millisecond)
	}
	for d := range delays {
		for i, di := range delays {
			if di == d {
				want = append(want, fmt.Sprint("p", i))
			}
		}
	}
	for range 6 {
		k, _ := base.Get()
		base.Done(k)
	}
	step(time.Second, 50)
	var got []string
	for range 50 {
		k, _ := base.Get()
		base.Done(k)
		got = append(got, k)
	}
	assert.Equal(t, want, got)

	q.addRetry("waits", time.Hour)
	calls := metrics.n.Load()
	assert.Equal(t, int64(2+2+3+2+3+50+1), calls, "every add counts as a retry")
	q.ShutDown()
	select {
	case <-q.done:
	default:
		t.Error("ShutDown returned before the goroutine exited")
	}
	assert.Zero(t, q.Retrying(), "waiting keys are dropped")
	q.AddAfter("late", time.Second)
	q.addRetry("late", time.Second)
	assert.Empty(t, q.pending(start))
	assert.Equal(t, calls, metrics.n.Load(), "adds after ShutDown are not counted")
	q.ShutDown()
}

func TestDelayQueueShutDownWithDrain(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := newKeyQueue[string]("", NoopMetrics{}, nil, nil)
	q := newDelayQueue[string](base, "", nil, nil)
	q.Add("a")
	q.AddAfter("b", time.Hour)
	k, _ := q.Get()
	drained := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(drained)
	}()
	require.Eventually(t, q.ShuttingDown, waitFor, time.Millisecond)
	select {
	case <-q.done:
	default:
		t.Error("the goroutine is still running while the queue drains")
	}
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned while a key was being processed")
	default:
	}
	q.Done(k)
	select {
	case <-drained:
	case <-time.After(waitFor):
		t.Fatal("ShutDownWithDrain did not return after Done")
	}
	assert.Empty(t, q.pending(time.Time{}))
}

// heldClock is the real clock, except that once hold was called NewTimer
// blocks until release: the delaying goroutine, its only caller, is then
// held where the test wants it.
type heldClock struct {
	clock.RealClock
	held     atomic.Bool
	enter    sync.Once
	entered  chan struct{} // closed once NewTimer is held
	released chan struct{}
}

func newHeldClock() *heldClock {
	return &heldClock{entered: make(chan struct{}), released: make(chan struct{})}
}

func (c *heldClock) NewTimer(d time.Duration) clock.Timer {
	if c.held.Load() {
		c.enter.Do(func() { close(c.entered) })
		<-c.released
	}
	return c.RealClock.NewTimer(d)
}

// Run returns only after the queue's delaying goroutine has returned. The
// goroutine is held inside the clock while Run is stopped, so Run must wait
// until it is let go.
func TestRunWaitsForTheDelayingGoroutine(t *testing.T) {
	// How long Run gets to return while the goroutine is held, which it
	// must not: ample for a Run that does not wait.
	const grace = 100 * time.Millisecond
	for i := range 5 {
		ignore := goleak.IgnoreCurrent()
		clk := newHeldClock()
		c, err := New("held", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
		require.NoError(t, err)
		c.clock = clk
		clk.held.Store(true)
		c.AddAfter("later", time.Hour) // Run hands it to the goroutine, which arms a timer
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		select {
		case <-clk.entered:
		case <-time.After(waitFor):
			t.Fatal("the delaying goroutine did not arm a timer")
		}
		cancel()
		select {
		case err := <-done:
			leaked := goleak.Find(ignore)
			close(clk.released)
			t.Fatalf("run %d: Run returned (%v) while its delaying goroutine was still running: %v", i, err, leaked)
		case <-time.After(grace):
		}
		close(clk.released)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("Run did not return once the delaying goroutine was let go")
		}
		goleak.VerifyNone(t, ignore)
	}
}

// driftingClock is a fake clock that moves on by drift whenever a timer is
// set: the move a test makes between the delaying goroutine's reading of
// the clock and its setting of the timer, which sets the timer late.
type driftingClock struct {
	*clocktesting.FakeClock
	drift time.Duration
}

func (c *driftingClock) NewTimer(d time.Duration) clock.Timer {
	c.Step(c.drift)
	return c.FakeClock.NewTimer(d)
}

// A key whose timer was set late is still added once the clock passes its
// due time and someone asks what is due (as queuetest.Advance does): asking
// wakes the goroutine, instead of leaving the key behind its late timer.
func TestDueKeyIsAddedDespiteALateTimer(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := &driftingClock{FakeClock: clocktesting.NewFakeClock(start), drift: time.Second}
	base := workqueue.NewTyped[string]()
	q := newDelayQueue[string](base, "", nil, clk)
	defer q.ShutDown()

	q.AddAfter("a", time.Minute)
	require.Eventually(t, clk.HasWaiters, waitFor, time.Millisecond, "the goroutine set its timer")
	clk.SetTime(start.Add(time.Minute)) // due now; the timer fires a second later
	require.Eventually(t, func() bool {
		q.nextDue()
		return base.Len() == 1
	}, waitFor, time.Millisecond, "the due key is added")
}

// A Periodic source on a clock that moves while its timer is set: the time
// NextDue reports for its tick is never earlier than the timer's, so
// moving the clock to that time fires it.
func TestPeriodicDueTimeNotBeforeItsTimer(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := &driftingClock{FakeClock: clocktesting.NewFakeClock(start), drift: time.Second}
	c, err := New("ticks", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), WithClock(clk))
	require.NoError(t, err)
	var ticks atomic.Int32
	require.NoError(t, c.Watch(Periodic(c, time.Minute, func(context.Context) ([]string, error) {
		ticks.Add(1)
		return nil, nil
	})))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	for want := int32(1); want <= 3; want++ {
		var due time.Time
		require.Eventually(t, func() bool {
			d, ok := c.NextDue()
			due = d
			return ok && d.After(clk.Now())
		}, waitFor, time.Millisecond, "tick %d armed", want)
		clk.SetTime(due)
		require.Eventually(t, func() bool { return ticks.Load() == want }, waitFor, time.Millisecond, "tick %d fired at the time NextDue named", want)
	}
}
