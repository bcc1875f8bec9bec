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
	src := queue.Periodic(time.Millisecond, func(ctx context.Context) ([]string, error) {
		if lists.Add(1) == 2 {
			return nil, errors.New("list failed") // skipped tick, source keeps going
		}
		return []string{"ns/a", "ns/b"}, nil
	})
	r := &keyCounter{}
	c, err := queue.New[string]("periodic", r, queue.WithSource(src))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") >= 3 && r.count("ns/b") >= 3 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	assert.GreaterOrEqual(t, lists.Load(), int32(4))
	goleak.VerifyNone(t)
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
			c, err := queue.New[string]("channel", r, queue.WithSource(queue.Channel(ch, func(k string) []string { return []string{k} })))
			require.NoError(t, err)
			stop := startController(t, context.Background(), c)
			ch <- "ns/a"
			ch <- "ns/b"
			require.Eventually(t, func() bool { return r.count("ns/a") == 1 && r.count("ns/b") == 1 }, waitFor, time.Millisecond)
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
	src := queue.Periodic(2*time.Millisecond, func(ctx context.Context) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		ticks = append(ticks, time.Now())
		return []string{"ns/a"}, nil
	}, queue.Jitter(1), queue.LowPriority())
	r := &keyCounter{}
	c, err := queue.New[string]("jitter", r, queue.WithSource(src))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") >= 5 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(ticks); i++ {
		assert.GreaterOrEqual(t, ticks[i].Sub(ticks[i-1]), 2*time.Millisecond, "no wait is shorter than the interval")
	}
}

// AtStart lists at once, without waiting for the interval.
func TestPeriodicAtStart(t *testing.T) {
	r := &keyCounter{}
	src := queue.Periodic(time.Hour, func(context.Context) ([]string, error) { return []string{"ns/a"}, nil }, queue.AtStart())
	c, err := queue.New[string]("at-start", r, queue.WithSource(src))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/a") == 1 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
}

func TestSourceFunc(t *testing.T) {
	r := &keyCounter{}
	src := queue.SourceFunc[string](func(ctx context.Context, q queue.Enqueuer[string]) {
		q.AddAfter("ns/later", time.Millisecond)
		q.Add("ns/now")
		<-ctx.Done()
	})
	c, err := queue.New[string]("func", r, queue.WithSource(src))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return r.count("ns/now") == 1 && r.count("ns/later") == 1 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
}
