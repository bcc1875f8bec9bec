package queue

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// delayQueue is the delaying layer of a Controller's workqueue: client-go's
// rate-limiting queue sits on top of it, the keyQueue below it. Keys given
// to AddAfter wait in it until they are due and are then added to the base
// queue. As in client-go's delaying queue, a key waits here at most once,
// its earliest due time counts, and every AddAfter counts as a retry in the
// workqueue metrics.
//
// It replaces client-go's delaying queue for two reasons. ShutDown returns
// only once the goroutine that moves due keys has exited: client-go's
// signals its goroutine and returns, so that it could outlive Run. And it
// tells retries after a failed reconcile apart from delays that were asked
// for (AddAfter, Result.RequeueAfter), so that the Controller can report how
// many keys wait for a retry.
type delayQueue[K comparable] struct {
	workqueue.TypedInterface[K]

	clock   clock.Clock
	retries workqueue.CounterMetric
	// due, if set, is called for each key just before it is added to the
	// base queue, with retry telling a retry's add from a delay's (both
	// when both were due); with q.mu held when the key waited here.
	due atomic.Pointer[func(key K, retry bool)]

	mu       sync.Mutex
	waiting  delayHeap[K]
	entries  map[K]*delayed[K]
	retrying int // entries with a retry time
	stopped  bool

	wake     chan struct{} // the earliest due time changed
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has exited
}

// delayed is one waiting key. A key can wait for a retry and for a delay at
// once; it is added when the earlier of the two is due, and both end then.
type delayed[K comparable] struct {
	key K
	// retryAt and delayAt are when the key's retry and its delay are due;
	// zero when it does not wait for one.
	retryAt, delayAt time.Time
	index            int // in the heap
}

func (d *delayed[K]) due() time.Time {
	switch {
	case d.retryAt.IsZero():
		return d.delayAt
	case d.delayAt.IsZero() || d.retryAt.Before(d.delayAt):
		return d.retryAt
	}
	return d.delayAt
}

// newDelayQueue returns a delaying layer over base and starts its
// goroutine, which ShutDown stops and waits for. A non-empty name counts
// retries with provider; clk is nil outside tests.
func newDelayQueue[K comparable](base workqueue.TypedInterface[K], name string, provider workqueue.MetricsProvider, clk clock.Clock) *delayQueue[K] {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var retries workqueue.CounterMetric = noopMetric{}
	if name != "" && provider != nil {
		retries = provider.NewRetriesMetric(name)
	}
	q := &delayQueue[K]{
		TypedInterface: base,
		clock:          clk,
		retries:        retries,
		entries:        map[K]*delayed[K]{},
		wake:           make(chan struct{}, 1),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
	}
	go q.run()
	return q
}

// AddAfter adds key to the base queue once d has passed (at once if
// d <= 0).
func (q *delayQueue[K]) AddAfter(key K, d time.Duration) { q.add(key, d, false) }

// addRetry is AddAfter for the retry of a failed reconcile: until it is
// due or forgotten, the key counts in Retrying.
func (q *delayQueue[K]) addRetry(key K, d time.Duration) { q.add(key, d, true) }

func (q *delayQueue[K]) add(key K, d time.Duration, retry bool) {
	if q.ShuttingDown() {
		return
	}
	q.retries.Inc()
	if d <= 0 {
		if due := q.due.Load(); due != nil {
			(*due)(key, retry)
		}
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	at := q.clock.Now().Add(d)
	e, ok := q.entries[key]
	if !ok {
		e = &delayed[K]{key: key}
		q.entries[key] = e
		heap.Push(&q.waiting, e)
	}
	if retry {
		if e.retryAt.IsZero() {
			q.retrying++
		}
		if e.retryAt.IsZero() || at.Before(e.retryAt) {
			e.retryAt = at
		}
	} else if e.delayAt.IsZero() || at.Before(e.delayAt) {
		e.delayAt = at
	}
	heap.Fix(&q.waiting, e.index)
	if e.index == 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// onDue makes f be called for each key just before it is added to the base
// queue: see the due field.
func (q *delayQueue[K]) onDue(f func(key K, retry bool)) { q.due.Store(&f) }

// forgetRetry drops the retry key waits for, if any: a later reconcile of
// the key made it needless. A delay the key also waits for is kept.
func (q *delayQueue[K]) forgetRetry(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.entries[key]
	if !ok || e.retryAt.IsZero() {
		return
	}
	e.retryAt = time.Time{}
	q.retrying--
	if e.delayAt.IsZero() {
		heap.Remove(&q.waiting, e.index)
		delete(q.entries, key)
		return
	}
	// A later due time: the goroutine may wake early, and finds nothing due.
	heap.Fix(&q.waiting, e.index)
}

// nextDue returns when the earliest waiting key is due, if any waits. A
// key already due wakes the goroutine: its timer may have been set from a
// reading of the clock taken just before a fake clock was moved, and so
// run late.
func (q *delayQueue[K]) nextDue() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return time.Time{}, false
	}
	due := q.waiting[0].due()
	if !due.After(q.clock.Now()) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return due, true
}

// Retrying returns the number of keys that wait for a retry.
func (q *delayQueue[K]) Retrying() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.retrying
}

// run adds keys to the base queue as they become due, until ShutDown.
func (q *delayQueue[K]) run() {
	defer close(q.done)
	for {
		next, ok := q.addDue()
		var (
			timer clock.Timer
			fire  <-chan time.Time
		)
		if ok {
			timer = q.clock.NewTimer(next)
			fire = timer.C()
		}
		stopped := false
		select {
		case <-q.stop:
			stopped = true
		case <-q.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if stopped {
			return
		}
	}
}

// addDue adds the keys that are due to the base queue and returns how long
// until the next one is, if any waits.
func (q *delayQueue[K]) addDue() (next time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for len(q.waiting) > 0 {
		e := q.waiting[0]
		if e.due().After(now) {
			return e.due().Sub(now), true
		}
		heap.Pop(&q.waiting)
		delete(q.entries, e.key)
		if !e.retryAt.IsZero() {
			q.retrying--
		}
		if due := q.due.Load(); due != nil {
			if !e.delayAt.IsZero() && !e.delayAt.After(now) {
				(*due)(e.key, false)
			}
			if !e.retryAt.IsZero() && !e.retryAt.After(now) {
				(*due)(e.key, true)
			}
		}
		// Under the lock, so that the key is never in neither queue nor
		// counted as waiting here.
		q.Add(e.key)
	}
	return 0, false
}

// ShutDown shuts the base queue down, drops the waiting keys, and returns
// once the goroutine has exited.
func (q *delayQueue[K]) ShutDown() {
	q.TypedInterface.ShutDown()
	q.stopWaiting()
}

// ShutDownWithDrain is ShutDown that also waits, as the base queue's does,
// until no key is being processed.
func (q *delayQueue[K]) ShutDownWithDrain() {
	q.stopWaiting()
	q.TypedInterface.ShutDownWithDrain()
}

func (q *delayQueue[K]) stopWaiting() {
	q.mu.Lock()
	q.stopped = true
	q.waiting = nil
	clear(q.entries)
	q.retrying = 0
	q.mu.Unlock()
	q.stopOnce.Do(func() { close(q.stop) })
	<-q.done
}

var _ workqueue.TypedDelayingInterface[string] = (*delayQueue[string])(nil)

// delayHeap orders waiting keys by due time, the earliest first.
type delayHeap[K comparable] []*delayed[K]

func (h delayHeap[K]) Len() int           { return len(h) }
func (h delayHeap[K]) Less(i, j int) bool { return h[i].due().Before(h[j].due()) }
func (h delayHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *delayHeap[K]) Push(x any) {
	e := x.(*delayed[K])
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *delayHeap[K]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
