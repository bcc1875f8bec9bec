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
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// keyCounter is a reconciler that counts reconciles per key.
type keyCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (k *keyCounter) Reconcile(_ context.Context, key string) (reconcile.Result, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.counts == nil {
		k.counts = map[string]int{}
	}
	k.counts[key]++
	return reconcile.Result{}, nil
}

func (k *keyCounter) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.counts[key]
}

func TestPeriodicSource(t *testing.T) {
	var lists atomic.Int32
	r := &keyCounter{}
	c, err := queue.New[string]("periodic", r)
	require.NoError(t, err)
	require.NoError(t, c.Watch(queue.Periodic(c, time.Millisecond, func(ctx context.Context) ([]string, error) {
		if lists.Add(1) == 2 {
			return nil, errors.New("list failed") // skipped tick, source keeps going
		}
		return []string{"ns/a", "ns/b"}, nil
	})))
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") >= 3 && r.count("ns/b") >= 3 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	assert.GreaterOrEqual(t, lists.Load(), int32(4))
	goleak.VerifyNone(t)
}

// A source may feed any Enqueuer, not only the controller it is watched by.
func TestPeriodicSourceFeedsItsQueue(t *testing.T) {
	r := &keyCounter{}
	c, err := queue.New[string]("periodic", r)
	require.NoError(t, err)
	q := &recordingEnqueuer{}
	require.NoError(t, c.Watch(queue.Periodic(q, time.Millisecond, func(context.Context) ([]string, error) {
		return []string{"ns/a"}, nil
	}, queue.LowPriority())))
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return len(q.added()) >= 2 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	for _, a := range q.added() {
		assert.Equal(t, "low ns/a", a)
	}
	assert.Zero(t, r.count("ns/a"), "the controller's own queue was not fed")
}

// recordingEnqueuer records the keys it is given, with their priority.
type recordingEnqueuer struct {
	mu   sync.Mutex
	adds []string
}

func (e *recordingEnqueuer) record(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.adds = append(e.adds, s)
}

func (e *recordingEnqueuer) Add(key string)                       { e.record("fresh " + key) }
func (e *recordingEnqueuer) AddLowPriority(key string)            { e.record("low " + key) }
func (e *recordingEnqueuer) AddAfter(key string, _ time.Duration) { e.record("after " + key) }

func (e *recordingEnqueuer) added() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.adds)
}

func TestChannelSource(t *testing.T) {
	tests := []struct {
		name      string
		closeChan bool
	}{
		{name: "stops when the controller stops"},
		{name: "stops when the channel is closed", closeChan: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan string)
			r := &keyCounter{}
			c, err := queue.New[string]("channel", r)
			require.NoError(t, err)
			require.NoError(t, c.Watch(queue.Channel(c, ch, func(k string) []string { return []string{k, k + "-too"} })))
			stop := startController(t, context.Background(), c)
			ch <- "ns/a"
			ch <- "ns/b"
			require.Eventually(t, func() bool {
				return r.count("ns/a") == 1 && r.count("ns/b") == 1 && r.count("ns/a-too") == 1 && r.count("ns/b-too") == 1
			}, waitFor, time.Millisecond)
			if tt.closeChan {
				close(ch)
			}
			require.NoError(t, stop())
			goleak.VerifyNone(t)
		})
	}
}

// With jitter, the waits of a periodic source vary between interval and
// interval*(1+factor).
func TestPeriodicJitter(t *testing.T) {
	var mu sync.Mutex
	var ticks []time.Time
	r := &keyCounter{}
	c, err := queue.New[string]("jitter", r)
	require.NoError(t, err)
	require.NoError(t, c.Watch(queue.Periodic(c, 2*time.Millisecond, func(ctx context.Context) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		ticks = append(ticks, time.Now())
		return []string{"ns/a"}, nil
	}, queue.Jitter(1), queue.LowPriority())))
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") >= 5 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(ticks), 5)
	for i := 1; i < len(ticks); i++ {
		assert.GreaterOrEqual(t, ticks[i].Sub(ticks[i-1]), 2*time.Millisecond, "no wait is shorter than the interval")
	}
}

// AtStart lists at once, without waiting for the interval.
func TestPeriodicAtStart(t *testing.T) {
	r := &keyCounter{}
	c, err := queue.New[string]("at-start", r)
	require.NoError(t, err)
	require.NoError(t, c.Watch(queue.Periodic(c, time.Hour, func(context.Context) ([]string, error) { return []string{"ns/a"}, nil }, queue.AtStart())))
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") == 1 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
}

// A Feed runs while the controller runs, adds what it likes, and is waited
// for by Run, whether it returns early or at the end.
func TestFeed(t *testing.T) {
	tests := []struct {
		name string
		// untilStop: the feed returns only when its context ends.
		untilStop bool
	}{
		{name: "runs until the controller stops", untilStop: true},
		{name: "returns when it has nothing more to add"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &keyCounter{}
			c, err := queue.New[string]("feed", r)
			require.NoError(t, err)
			var returned atomic.Bool
			require.NoError(t, c.Watch(queue.Feed(func(ctx context.Context) {
				defer returned.Store(true)
				c.AddAfter("ns/later", time.Millisecond)
				c.Add("ns/now")
				if tt.untilStop {
					<-ctx.Done()
				}
			})))
			stop := startController(t, context.Background(), c)
			require.Eventually(t, func() bool { return r.count("ns/now") == 1 && r.count("ns/later") == 1 }, waitFor, time.Millisecond)
			require.NoError(t, stop())
			assert.True(t, returned.Load(), "Run returned before its Feed")
			goleak.VerifyNone(t)
		})
	}
}
