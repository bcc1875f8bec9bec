package queue

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
)

// laneQueue is the client-go queue with lanes plugged in, as New builds it,
// plus the two ways of adding.
type laneQueue struct {
	*workqueue.Typed[string]
	lanes *lanes[string]
}

func newLaneQueue() *laneQueue {
	l := newLanes[string]()
	return &laneQueue{Typed: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Queue: l, MetricsProvider: NoopMetrics{}}), lanes: l}
}

func (q *laneQueue) add(key string) { q.lanes.clearLow(key); q.Add(key) }
func (q *laneQueue) addLow(key string) {
	q.lanes.markLow(key)
	q.Add(key)
}

// drain takes every waiting key, marking each done.
func (q *laneQueue) drain(t *testing.T) []string {
	t.Helper()
	var got []string
	for q.Len() > 0 {
		k, shutdown := q.Get()
		require.False(t, shutdown)
		got = append(got, k)
		q.Done(k)
	}
	return got
}

func TestLanesOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []string // "+k" fresh add, "-k" low-priority add
		want []string
	}{
		{name: "fresh keys are FIFO", ops: []string{"+a", "+b", "+c"}, want: []string{"a", "b", "c"}},
		{name: "low keys are FIFO", ops: []string{"-a", "-b", "-c"}, want: []string{"a", "b", "c"}},
		{name: "fresh keys go first", ops: []string{"-a", "-b", "+c", "-d", "+e"}, want: []string{"c", "e", "a", "b", "d"}},
		{name: "fresh add promotes a waiting low key", ops: []string{"-a", "-b", "-c", "+b"}, want: []string{"b", "a", "c"}},
		{name: "low add leaves a waiting fresh key where it is", ops: []string{"+a", "+b", "-a"}, want: []string{"a", "b"}},
		{name: "duplicates are merged", ops: []string{"-a", "-a", "+b", "+b", "-b"}, want: []string{"b", "a"}},
		{name: "promoted then re-added low", ops: []string{"-a", "-b", "+a", "-a", "-c"}, want: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newLaneQueue()
			defer q.ShutDown()
			for _, op := range tt.ops {
				if op[0] == '+' {
					q.add(op[1:])
				} else {
					q.addLow(op[1:])
				}
			}
			assert.Equal(t, len(tt.want), q.Len())
			assert.Equal(t, tt.want, q.drain(t))
			assert.Zero(t, q.lanes.lowIntents.Load(), "no intent is left behind")
		})
	}
}

// A key added while it is being processed is queued again once, on Done,
// in the lane of its latest add.
func TestLanesAddWhileProcessing(t *testing.T) {
	tests := []struct {
		name      string
		during    []string
		wantOrder []string
	}{
		{name: "low add during processing stays low", during: []string{"-a"}, wantOrder: []string{"x", "a"}},
		{name: "fresh add during processing is fresh", during: []string{"+a"}, wantOrder: []string{"a", "x"}},
		{name: "latest intent wins: fresh", during: []string{"-a", "+a"}, wantOrder: []string{"a", "x"}},
		{name: "latest intent wins: low", during: []string{"+a", "-a"}, wantOrder: []string{"x", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newLaneQueue()
			defer q.ShutDown()
			q.add("a")
			k, _ := q.Get()
			require.Equal(t, "a", k)
			for _, op := range tt.during {
				if op[0] == '+' {
					q.add(op[1:])
				} else {
					q.addLow(op[1:])
				}
			}
			assert.Equal(t, 0, q.Len(), "a key being processed is not handed out again")
			q.addLow("x")
			q.Done("a")
			assert.Equal(t, tt.wantOrder, q.drain(t))
		})
	}
}

// The workqueue contract with lanes plugged in: many producers and
// consumers, every key processed, never by two consumers at once.
func TestLanesConcurrentContract(t *testing.T) {
	q := newLaneQueue()
	const producers, consumers, keys = 8, 4, 200
	var (
		mu        sync.Mutex
		inFlight  = map[string]bool{}
		processed = map[string]int{}
		overlaps  int
	)
	var wg sync.WaitGroup
	for c := range consumers {
		_ = c
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if inFlight[k] {
					overlaps++
				}
				inFlight[k] = true
				processed[k]++
				mu.Unlock()
				mu.Lock()
				inFlight[k] = false
				mu.Unlock()
				q.Done(k)
			}
		})
	}
	var prod sync.WaitGroup
	for p := range producers {
		prod.Go(func() {
			for i := range keys {
				k := fmt.Sprint("k", i%50)
				if (i+p)%3 == 0 {
					q.add(k)
				} else {
					q.addLow(k)
				}
			}
		})
	}
	prod.Wait()
	q.ShutDownWithDrain()
	q.ShutDown()
	wg.Wait()
	assert.Zero(t, overlaps, "a key was processed by two consumers at once")
	assert.Len(t, processed, 50, "every key was processed")
	assert.Equal(t, 0, q.Len())
	assert.Zero(t, len(q.lanes.inLow))
}

// A steady stream of fresh keys delays the low lane but cannot starve it.
func TestLanesLowLaneNotStarved(t *testing.T) {
	q := newLaneQueue()
	defer q.ShutDown()
	for i := range 3 {
		q.addLow(fmt.Sprint("low-", i))
	}
	var order []string
	for i := range 40 {
		q.add(fmt.Sprint("fresh-", i)) // one fresh key arrives per key served
		k, _ := q.Get()
		order = append(order, k)
		q.Done(k)
	}
	var lowAt []int
	for i, k := range order {
		if k[:4] == "low-" {
			lowAt = append(lowAt, i)
		}
	}
	assert.Equal(t, []int{freshPerLow, 2*freshPerLow + 1, 3*freshPerLow + 2}, lowAt,
		"one low key after every %d fresh ones", freshPerLow)
}

func TestFIFOCompaction(t *testing.T) {
	var f fifo[int]
	for i := range 5000 {
		f.push(entry[int]{key: i})
	}
	for i := range 3000 {
		require.Equal(t, i, f.pop().key)
	}
	assert.Equal(t, 2000, f.len())
	assert.LessOrEqual(t, f.head, 1024, "storage was compacted")
	for i := 3000; i < 5000; i++ {
		require.Equal(t, i, f.pop().key)
	}
	assert.Equal(t, 0, f.len())
	assert.Equal(t, 0, f.head)
}
