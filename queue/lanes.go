package queue

import (
	"sync"
	"sync/atomic"
)

// lanes orders the keys waiting in a controller's workqueue. It is the
// workqueue.Queue plugged into client-go's queue, so client-go still owns
// de-duplication, the one-worker-per-key rule, delays and rate limiting;
// lanes only decides which waiting key comes next.
//
// There are two FIFO lanes. Keys added with Add (fresh events, retries,
// delayed adds) go to the fresh lane; keys added with AddLowPriority (objects
// that did not change: an informer's initial list, resyncs) go to the low
// lane. While both lanes hold keys, the low lane gets one key for every
// freshPerLow fresh ones, so a steady stream of fresh events delays the low
// lane but cannot starve it. A fresh add of a key waiting in the low lane
// moves it to the fresh lane.
//
// Push, Pop, Len and Touch run under the workqueue's lock. markLow and
// clearLow run before the workqueue's Add, outside that lock, so the
// intents they record have their own mutex; lowIntents lets the common path
// (no low-priority adds outstanding) skip that mutex.
type lanes[K comparable] struct {
	fresh fifo[K]
	low   fifo[K]
	// freshRun counts fresh keys handed out since the last low one.
	freshRun int
	// inLow maps each key in the low lane to the sequence number of its
	// entry; entries whose number no longer matches were promoted.
	inLow map[K]uint64
	seq   uint64

	mu         sync.Mutex
	intents    map[K]struct{} // keys whose latest add was low priority
	lowIntents atomic.Int64   // len(intents), readable without mu
}

// freshPerLow is how many fresh keys are served for each low-priority key
// while both wait.
const freshPerLow = 8

func newLanes[K comparable]() *lanes[K] {
	return &lanes[K]{inLow: map[K]uint64{}, intents: map[K]struct{}{}}
}

// markLow records that the next Push or Touch of key comes from a
// low-priority add.
func (l *lanes[K]) markLow(key K) {
	l.mu.Lock()
	if _, ok := l.intents[key]; !ok {
		l.intents[key] = struct{}{}
		l.lowIntents.Add(1)
	}
	l.mu.Unlock()
}

// clearLow records that the latest add of key is a fresh one.
func (l *lanes[K]) clearLow(key K) {
	if l.lowIntents.Load() == 0 {
		return
	}
	l.mu.Lock()
	l.forgetIntentLocked(key)
	l.mu.Unlock()
}

// takeIntent reports and forgets whether key's latest add was low priority.
func (l *lanes[K]) takeIntent(key K) bool {
	if l.lowIntents.Load() == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.forgetIntentLocked(key)
}

func (l *lanes[K]) forgetIntentLocked(key K) bool {
	if _, ok := l.intents[key]; !ok {
		return false
	}
	delete(l.intents, key)
	l.lowIntents.Add(-1)
	return true
}

// Push adds a key that is not waiting yet.
func (l *lanes[K]) Push(key K) {
	if l.takeIntent(key) {
		l.seq++
		l.inLow[key] = l.seq
		l.low.push(entry[K]{key: key, seq: l.seq})
		return
	}
	l.fresh.push(entry[K]{key: key})
}

// Touch is called when a waiting key is added again: a fresh add promotes
// it out of the low lane.
func (l *lanes[K]) Touch(key K) {
	if l.takeIntent(key) {
		return
	}
	if _, waitingLow := l.inLow[key]; waitingLow {
		delete(l.inLow, key)
		l.fresh.push(entry[K]{key: key})
	}
}

// Len returns the number of waiting keys.
func (l *lanes[K]) Len() int { return l.fresh.len() + len(l.inLow) }

// Pop returns the next key: the oldest fresh one, except that every
// (freshPerLow+1)th key comes from the low lane while it is not empty. The
// workqueue calls Pop only when Len() > 0.
func (l *lanes[K]) Pop() K {
	if l.fresh.len() > 0 && (len(l.inLow) == 0 || l.freshRun < freshPerLow) {
		l.freshRun++
		return l.fresh.pop().key
	}
	l.freshRun = 0
	for {
		e := l.low.pop()
		if seq, ok := l.inLow[e.key]; ok && seq == e.seq {
			delete(l.inLow, e.key)
			return e.key
		}
		// A stale entry of a key that was promoted; skip it.
	}
}

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
		f.items, f.head = f.items[:0], 0
	case f.head > 1024 && f.head*2 > len(f.items):
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return e
}
