package queue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// keyQueue is the base of a Controller's workqueue. client-go's delaying and
// rate-limiting queues are layered on top of it (it is their
// workqueue.TypedInterface), and it keeps the contract of client-go's base
// queue: a key waits at most once, it is handed to one worker at a time, and
// a key added while it is being processed is handed out once more after Done.
//
// What it adds is the order of waiting keys. There are two FIFO lanes: keys
// added fresh (Add, retries, delayed adds) and keys added at low priority
// (objects that did not change: an informer's initial list, resyncs). While
// both lanes hold keys, the low lane gets one key for every freshPerLow fresh
// ones, so a steady stream of fresh keys delays it but cannot starve it.
// Priority only goes up until a key is handed out: of all the adds of a key
// since it was last handed to a worker, including adds while it is being
// processed, the highest priority decides the lane it waits in.
//
// It replaces client-go's workqueue.Typed because that queue keeps its dirty
// and processing sets to itself: an add of a key that is being processed
// never reaches a pluggable workqueue.Queue, so a plug-in cannot tell whether
// a fresh add came before a low-priority one without a lock and a map look-up
// of its own on every add. Here one lock and one map hold both.
//
// Memory: one map entry per key that waits or is being processed; the fresh
// lane holds exactly the keys waiting in it; the low lane holds its waiting
// keys plus stale entries of promoted keys, which are dropped once they
// outnumber the live ones. Like any Go map and slice, the storage of the
// map and the lanes stays at its peak size for reuse.
type keyQueue[K comparable] struct {
	mu   sync.Mutex
	cond sync.Cond

	keys map[K]keyState
	// keysHigh is the most keys held since keys was made: a map keeps the
	// storage of its largest size, which is released once it empties.
	keysHigh int
	// lanes holds the waiting keys when the queue is not fair (group is
	// nil).
	lanes lanes[K]
	// With fairness, group names the group of a key; each group with
	// waiting keys has lanes of its own in groups, and ring lists those
	// groups in the order they take turns, turn being the next one.
	group  func(K) string
	groups map[string]*lanes[K]
	ring   []*lanes[K]
	turn   int
	// waiting counts the keys waiting in all lanes.
	waiting int
	// seq numbers low-lane entries, so that a stale entry cannot stand for
	// a later low-priority add of the same key.
	seq          uint64
	processing   int
	shuttingDown bool
	drain        bool

	m *keyQueueMetrics // nil when metrics are discarded
}

// keyStatus is where a key is.
type keyStatus uint8

const (
	// waitingFresh: in the fresh lane.
	waitingFresh keyStatus = iota + 1
	// waitingLow: in the low lane.
	waitingLow
	// processing: handed out and not added since.
	processing
	// processingFresh: handed out, added since, at least once fresh.
	processingFresh
	// processingLow: handed out, added since, only at low priority.
	processingLow
)

type keyState struct {
	status keyStatus
	// seq identifies the key's low-lane entry while it is waitingLow.
	seq uint64
	// addedAt is when the key last became due, startedAt when it was last
	// handed out, on the metrics clock; both stay zero without metrics.
	// Keeping them here spares the two maps per queue that client-go keeps.
	addedAt, startedAt int64
}

// freshPerLow is how many fresh keys are served for each low-priority key
// while both wait.
const freshPerLow = 8

// compactAbove is the number of served entries from which a lane moves its
// remaining entries to the front of its storage.
const compactAbove = 1024

// lanes are the two lanes of the queue, or of one group of a fair queue.
type lanes[K comparable] struct {
	name  string // the group's name; empty when the queue is not fair
	fresh fifo[K]
	low   fifo[K]
	// lowWaiting counts the live entries of the low lane, lowStale the
	// entries left behind by promoted keys.
	lowWaiting int
	lowStale   int
	// freshRun counts fresh keys handed out while low keys were waiting,
	// since the last low key.
	freshRun int
}

func (l *lanes[K]) len() int { return l.fresh.len() + l.lowWaiting }

// newKeyQueue returns an empty queue. A non-empty name with a provider other
// than NoopMetrics records client-go's workqueue metrics under that name;
// the unfinished-work gauges are then updated by runMetrics. A non-nil group
// makes the queue fair between the groups it puts keys in (see fairness).
func newKeyQueue[K comparable](name string, provider workqueue.MetricsProvider, clk clock.WithTicker, group func(K) string) *keyQueue[K] {
	q := &keyQueue[K]{keys: map[K]keyState{}, group: group}
	if group != nil {
		q.groups = map[string]*lanes[K]{}
	}
	q.cond.L = &q.mu
	if _, noop := provider.(NoopMetrics); name != "" && provider != nil && !noop {
		q.m = newKeyQueueMetrics(name, provider, clk)
	}
	return q
}

// Add adds key at normal priority: the TypedInterface method that the
// delaying and rate-limiting queues call.
func (q *keyQueue[K]) Add(key K) { q.add(key, false) }

// AddLow adds key at low priority.
func (q *keyQueue[K]) AddLow(key K) { q.add(key, true) }

func (q *keyQueue[K]) add(key K, low bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	s, ok := q.keys[key]
	switch {
	case !ok:
		q.push(key, low, q.m.added())
		q.cond.Signal()
		return
	case s.status == waitingLow && !low:
		// Promotion: the old entry stays behind in the low lane, stale.
		l := q.lanesOf(key)
		l.lowWaiting--
		l.lowStale++
		l.fresh.push(entry[K]{key: key})
		q.keys[key] = keyState{status: waitingFresh, addedAt: s.addedAt}
		q.dropStaleLow(l)
	case s.status == processing:
		s.addedAt = q.m.added()
		s.status = processingFresh
		if low {
			s.status = processingLow
		}
		q.keys[key] = s
	case s.status == processingLow && !low:
		s.status = processingFresh
		q.keys[key] = s
	}
	// Otherwise the key already waits or will wait at least as high.
}

// lanesOf returns the lanes key waits in, or would wait in: those of its
// group in a fair queue, where a group with no waiting key has none until
// one comes.
func (q *keyQueue[K]) lanesOf(key K) *lanes[K] {
	if q.group == nil {
		return &q.lanes
	}
	name := q.group(key)
	l, ok := q.groups[name]
	if !ok {
		l = &lanes[K]{name: name}
		q.groups[name] = l
	}
	return l
}

// push puts a key that is not waiting, due since addedAt, into its lane.
func (q *keyQueue[K]) push(key K, low bool, addedAt int64) {
	l := q.lanesOf(key)
	if l.len() == 0 && q.group != nil {
		// The group's turn comes after every group already waiting.
		q.ring = append(q.ring, nil)
		copy(q.ring[q.turn+1:], q.ring[q.turn:])
		q.ring[q.turn] = l
		q.turn++
		if q.turn == len(q.ring) {
			q.turn = 0
		}
	}
	if low {
		q.seq++
		l.low.push(entry[K]{key: key, seq: q.seq})
		l.lowWaiting++
		q.keys[key] = keyState{status: waitingLow, seq: q.seq, addedAt: addedAt}
	} else {
		l.fresh.push(entry[K]{key: key})
		q.keys[key] = keyState{status: waitingFresh, addedAt: addedAt}
	}
	q.waiting++
	q.keysHigh = max(q.keysHigh, len(q.keys))
}

// dropStaleLow removes the low lane's stale entries once they outnumber the
// live ones, so that the lane's size stays within twice the number of keys
// waiting in it (plus a constant). Each entry is looked at once per halving,
// which keeps the cost per promotion constant.
func (q *keyQueue[K]) dropStaleLow(l *lanes[K]) {
	switch {
	case l.lowWaiting == 0:
		l.low.reset()
		l.lowStale = 0
	case l.lowStale > 64 && l.lowStale > l.lowWaiting:
		l.low.filter(func(e entry[K]) bool {
			s := q.keys[e.key]
			return s.status == waitingLow && s.seq == e.seq
		})
		l.lowStale = 0
	}
}

// Len returns the number of waiting keys.
func (q *keyQueue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// Get blocks until a key waits or the queue shuts down, and hands out the
// next key: the oldest fresh one, except that every (freshPerLow+1)th key
// comes from the low lane while it holds keys. As with client-go's queue,
// waiting keys are still handed out after ShutDown; shutdown is reported
// once none is left.
func (q *keyQueue[K]) Get() (key K, shutdown bool) {
	key, _, shutdown = q.getTimed()
	return key, shutdown
}

// getTimed is Get that also returns when the key was handed out, on the
// metrics clock (zero without metrics), for the worker loop to time the
// reconcile without reading the clock again.
func (q *keyQueue[K]) getTimed() (key K, startedAt int64, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.waiting == 0 && !q.shuttingDown {
		q.cond.Wait()
	}
	if q.waiting == 0 {
		return key, 0, true
	}
	key = q.pop()
	startedAt = q.m.handedOut(q.keys[key].addedAt)
	q.keys[key] = keyState{status: processing, startedAt: startedAt}
	q.processing++
	return key, startedAt, false
}

// now reads the metrics clock; it returns zero without metrics.
func (q *keyQueue[K]) now() int64 {
	if q.m == nil {
		return 0
	}
	return q.m.now()
}

// pop takes the next key out of its lane: in a fair queue, from the group
// whose turn it is, which then goes to the back of the ring (or leaves it,
// once it has no key left).
func (q *keyQueue[K]) pop() K {
	q.waiting--
	if q.group == nil {
		return q.lanes.pop(q.keys)
	}
	l := q.ring[q.turn]
	key := l.pop(q.keys)
	if l.len() == 0 {
		q.ring = append(q.ring[:q.turn], q.ring[q.turn+1:]...)
		clear(q.ring[len(q.ring):cap(q.ring)])
		delete(q.groups, l.name)
	} else {
		q.turn++
	}
	if q.turn >= len(q.ring) {
		q.turn = 0
	}
	return key
}

// pop takes the next key out of l; keys tells live low-lane entries from
// stale ones.
func (l *lanes[K]) pop(keys map[K]keyState) K {
	if l.fresh.len() > 0 && (l.lowWaiting == 0 || l.freshRun < freshPerLow) {
		// The share of the low lane counts only fresh keys served while
		// low keys wait.
		if l.lowWaiting == 0 {
			l.freshRun = 0
		} else {
			l.freshRun++
		}
		return l.fresh.pop().key
	}
	l.freshRun = 0
	for {
		e := l.low.pop()
		if s := keys[e.key]; s.status == waitingLow && s.seq == e.seq {
			l.lowWaiting--
			if l.lowWaiting == 0 && l.lowStale > 0 {
				l.low.reset()
				l.lowStale = 0
			}
			return e.key
		}
		l.lowStale--
	}
}

// Done marks key as no longer being processed. If it was added meanwhile it
// waits again, in the lane its adds asked for. Done of a key that is not
// being processed does nothing.
func (q *keyQueue[K]) Done(key K) { q.doneAt(key, q.now()) }

// doneAt is Done with the time the work ended, read by the caller from
// now.
func (q *keyQueue[K]) doneAt(key K, end int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := q.keys[key]
	if !ok || s.status < processing {
		return
	}
	q.m.done(s.startedAt, end)
	q.processing--
	switch s.status {
	case processingFresh, processingLow:
		q.push(key, s.status == processingLow, s.addedAt)
		q.cond.Signal()
	default:
		delete(q.keys, key)
		if len(q.keys) == 0 && q.keysHigh > compactAbove {
			q.keys, q.keysHigh = map[K]keyState{}, 0
		}
	}
	if q.processing == 0 && q.drain {
		q.cond.Broadcast() // ShutDownWithDrain waits for this
	}
}

// ShutDown makes the queue ignore new keys and wakes every Get; keys still
// waiting are handed out until none is left.
func (q *keyQueue[K]) ShutDown() {
	q.mu.Lock()
	q.drain = false
	q.shuttingDown = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// ShutDownWithDrain is ShutDown that also waits until no key is being
// processed (or ShutDown is called). Like client-go's, it does not wait for
// keys that are still waiting.
func (q *keyQueue[K]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain = true
	q.shuttingDown = true
	q.cond.Broadcast()
	for q.processing > 0 && q.drain {
		q.cond.Wait()
	}
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *keyQueue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

// sizes reports the sizes of the queue's structures, for tests.
type keyQueueSizes struct {
	Keys, Fresh, Low, Waiting, Processing, Groups int
}

func (q *keyQueue[K]) sizes() keyQueueSizes {
	q.mu.Lock()
	defer q.mu.Unlock()
	sizes := keyQueueSizes{Keys: len(q.keys), Waiting: q.waiting, Processing: q.processing, Groups: len(q.groups)}
	for _, l := range q.allLanes() {
		sizes.Fresh += l.fresh.len()
		sizes.Low += l.low.len()
	}
	return sizes
}

// allLanes returns the lanes that hold keys, in the order of their turns.
func (q *keyQueue[K]) allLanes() []*lanes[K] {
	if q.group == nil {
		return []*lanes[K]{&q.lanes}
	}
	return append(q.ring[q.turn:len(q.ring):len(q.ring)], q.ring[:q.turn]...)
}

var _ workqueue.TypedInterface[string] = (*keyQueue[string])(nil)

type entry[K comparable] struct {
	key K
	seq uint64
}

// fifo is a slice-backed queue that reuses its storage.
type fifo[K comparable] struct {
	items []entry[K]
	head  int
}

func (f *fifo[K]) push(e entry[K]) { f.items = append(f.items, e) }

func (f *fifo[K]) len() int { return len(f.items) - f.head }

func (f *fifo[K]) pop() entry[K] {
	e := f.items[f.head]
	f.items[f.head] = entry[K]{} // let the key be collected
	f.head++
	switch {
	case f.head == len(f.items):
		f.reset()
	case f.head > compactAbove && f.head*2 > len(f.items):
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return e
}

// reset empties the fifo. It keeps small storage for reuse and releases
// large storage, which a burst of keys left behind.
func (f *fifo[K]) reset() {
	if cap(f.items) > compactAbove {
		f.items, f.head = nil, 0
		return
	}
	clear(f.items)
	f.items, f.head = f.items[:0], 0
}

// filter keeps, in order, the entries for which keep is true.
func (f *fifo[K]) filter(keep func(entry[K]) bool) {
	n := 0
	for _, e := range f.items[f.head:] {
		if keep(e) {
			f.items[n] = e
			n++
		}
	}
	clear(f.items[n:])
	f.items, f.head = f.items[:n], 0
}

// keyQueueMetrics records client-go's workqueue metrics for a keyQueue, with
// client-go's meaning: depth and adds count keys that become due (waiting,
// or added while processing), latency is the time from that add to the key
// being handed out, work duration the time from hand-out to Done, and the
// unfinished-work gauges describe the keys being processed.
type keyQueueMetrics struct {
	clock        clock.WithTicker
	epoch        time.Time // times are kept as nanoseconds since epoch
	depth        workqueue.GaugeMetric
	adds         workqueue.CounterMetric
	latency      workqueue.HistogramMetric
	workDuration workqueue.HistogramMetric
	unfinished   workqueue.SettableGaugeMetric
	longest      workqueue.SettableGaugeMetric
}

func newKeyQueueMetrics(name string, p workqueue.MetricsProvider, clk clock.WithTicker) *keyQueueMetrics {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &keyQueueMetrics{
		clock:        clk,
		epoch:        clk.Now(),
		depth:        p.NewDepthMetric(name),
		adds:         p.NewAddsMetric(name),
		latency:      p.NewLatencyMetric(name),
		workDuration: p.NewWorkDurationMetric(name),
		unfinished:   p.NewUnfinishedWorkSecondsMetric(name),
		longest:      p.NewLongestRunningProcessorSecondsMetric(name),
	}
}

func (m *keyQueueMetrics) now() int64 { return int64(m.clock.Since(m.epoch)) }

// added counts a key that became due and returns the time it did.
func (m *keyQueueMetrics) added() int64 {
	if m == nil {
		return 0
	}
	m.adds.Inc()
	m.depth.Inc()
	return m.now()
}

// handedOut records the wait of a key due since addedAt and returns the
// time it was handed out.
func (m *keyQueueMetrics) handedOut(addedAt int64) int64 {
	if m == nil {
		return 0
	}
	m.depth.Dec()
	now := m.now()
	m.latency.Observe(time.Duration(now - addedAt).Seconds())
	return now
}

// done records the work on a key handed out at startedAt and done at end.
func (m *keyQueueMetrics) done(startedAt, end int64) {
	if m == nil {
		return
	}
	m.workDuration.Observe(time.Duration(end - startedAt).Seconds())
}

// unfinishedWorkPeriod is how often the unfinished-work gauges are updated,
// as client-go does.
const unfinishedWorkPeriod = 500 * time.Millisecond

// runMetrics updates the unfinished-work gauges until stop is closed. It
// returns at once when metrics are discarded.
func (q *keyQueue[K]) runMetrics(stop <-chan struct{}) {
	if q.m == nil {
		return
	}
	t := q.m.clock.NewTicker(unfinishedWorkPeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		q.updateUnfinishedWork()
	}
}

func (q *keyQueue[K]) updateUnfinishedWork() {
	q.mu.Lock()
	defer q.mu.Unlock()
	var total, oldest float64
	now := q.m.now()
	for _, s := range q.keys {
		if s.status < processing {
			continue
		}
		age := time.Duration(now - s.startedAt).Seconds()
		total += age
		oldest = max(oldest, age)
	}
	q.m.unfinished.Set(total)
	q.m.longest.Set(oldest)
}
