package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// stormConfig describes one storm: initial keys added at low priority, then
// fresh changes at a steady pace while the initial keys are worked off.
type stormConfig struct {
	initial  int           // keys of the initial list
	fresh    int           // fresh changes; even ones hit waiting initial keys, odd ones new keys
	delay    time.Duration // from the last initial add to the first fresh change
	interval time.Duration // time between two fresh changes
	cost     time.Duration // simulated work per reconcile
	workers  int
}

// benchStorm is the storm of BenchmarkFreshDuringStorm; the benchmark
// varies its delay.
var benchStorm = stormConfig{initial: 20_000, fresh: 100, delay: time.Millisecond, interval: time.Millisecond, cost: 50 * time.Microsecond, workers: 2}

// stormPeers are the peers of BenchmarkFreshDuringStorm: a plain client-go
// FIFO (no priorities: everything is added the same way), ctrlkit (initial
// list with AddLowPriority) and controller-runtime's default priority queue
// (initial list at handler.LowPriority, as its handlers do).
var stormPeers = []peerKind{
	{"client-go-fifo", handwrittenPeer.new},
	ctrlkitPeer,
	{"controller-runtime-priorityqueue", controllerRuntimePeer.new},
}

// stormKeys returns the key table of a storm and, for each fresh change,
// the index of the key it touches. Fresh change j touches, for even j, an
// initial key in the second half of the list (one that is still waiting:
// the workers cannot have reached it yet), and for odd j a new key.
func stormKeys(c stormConfig) (*keyTable, []int) {
	newKeys := (c.fresh + 1) / 2
	names := append(keyNames("foo", c.initial), keyNames("new", newKeys)...)
	targets := make([]int, c.fresh)
	half := c.initial / 2
	step := max(1, half/max(1, c.fresh/2))
	for j := range targets {
		if j%2 == 0 {
			targets[j] = half + (j/2)*step%half
		} else {
			targets[j] = c.initial + j/2
		}
	}
	return newKeyTable(names), targets
}

// stormRecorder is the reconcile of a storm: it notes when each fresh key's
// reconcile starts, simulates the work, and signals when every key has been
// reconciled and every fresh change has been picked up.
type stormRecorder struct {
	epoch time.Time
	cost  time.Duration
	fresh map[string]int // key name -> fresh change; read-only while running

	added   []atomic.Int64 // ns after epoch at which fresh change j was added
	started []atomic.Int64 // ns after epoch at which its reconcile started

	freshSeen  atomic.Int64
	freshDone  chan struct{}
	reconciled atomic.Int64
	total      int64
	allDone    chan struct{}
}

func newStormRecorder(c stormConfig, keys *keyTable, targets []int) *stormRecorder {
	s := &stormRecorder{
		epoch:     time.Now(),
		cost:      c.cost,
		fresh:     make(map[string]int, len(targets)),
		added:     make([]atomic.Int64, len(targets)),
		started:   make([]atomic.Int64, len(targets)),
		freshDone: make(chan struct{}),
		allDone:   make(chan struct{}),
	}
	for j, t := range targets {
		s.fresh[keys.names[t]] = j
	}
	// Every initial key and every new key is reconciled once: a fresh
	// change to a waiting key does not add a reconcile.
	s.total = int64(c.initial + (c.fresh+1)/2)
	return s
}

// now returns the time since epoch in ns; never 0 after the first call.
func (s *stormRecorder) now() int64 { return int64(time.Since(s.epoch)) + 1 }

func (s *stormRecorder) markAdded(j int) { s.added[j].Store(s.now()) }

func (s *stormRecorder) reconcile(name string) {
	if j, ok := s.fresh[name]; ok && s.added[j].Load() != 0 && s.started[j].CompareAndSwap(0, s.now()) {
		if s.freshSeen.Add(1) == int64(len(s.started)) {
			close(s.freshDone)
		}
	}
	work(s.cost)
	if s.reconciled.Add(1) == s.total {
		close(s.allDone)
	}
}

// work simulates a reconcile that takes d of wall time. It busy-waits
// rather than sleeping because time.Sleep rounds short sleeps up to the
// timer granularity of the machine (about 1ms on some virtual machines,
// twenty times the intended cost), and it yields on every turn so that the
// goroutines adding keys and the queues' own goroutines are not starved.
func work(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		runtime.Gosched()
	}
}

// latencies returns, for each fresh change, the time from its add to the
// start of its reconcile.
func (s *stormRecorder) latencies() []time.Duration {
	out := make([]time.Duration, len(s.added))
	for j := range out {
		out[j] = time.Duration(s.started[j].Load() - s.added[j].Load())
	}
	return out
}

// stormResult is what one storm measured.
type stormResult struct {
	latencies []time.Duration // per fresh change
	drain     time.Duration   // from the first initial add until every key was reconciled
}

// runStorm runs one storm through a fresh peer of the given kind.
func runStorm(tb testing.TB, kind peerKind, c stormConfig, keys *keyTable, targets []int, timeout time.Duration) stormResult {
	s := newStormRecorder(c, keys, targets)
	p := kind.new(tb, keys, c.workers, s.reconcile)
	stop := p.start(context.Background(), tb)
	defer stop()

	start := time.Now()
	for i := range c.initial {
		p.addLow(i)
	}
	// Pace the fresh changes like a steady trickle of edits.
	<-time.After(c.delay)
	ticker := time.NewTicker(c.interval)
	for j, t := range targets {
		if j > 0 {
			<-ticker.C
		}
		s.markAdded(j)
		p.add(t)
	}
	ticker.Stop()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, ch := range []chan struct{}{s.freshDone, s.allDone} {
		select {
		case <-ch:
		case <-deadline.C:
			tb.Fatalf("%s: storm not worked off within %s: %d of %d keys reconciled, %d of %d fresh changes picked up",
				kind.name, timeout, s.reconciled.Load(), s.total, s.freshSeen.Load(), len(targets))
		}
	}
	return stormResult{latencies: s.latencies(), drain: time.Since(start)}
}

// BenchmarkFreshDuringStorm measures how long fresh changes wait while a
// large initial list (or resync) is being worked off. Each op is one storm:
// 20,000 initial-list keys are added, then 100 fresh changes one millisecond
// apart (half to initial keys that are still waiting, half to new keys),
// with 2 workers and a reconcile that takes 50µs (a yielding busy wait). Reported: the
// latency from each fresh add to the start of its reconcile over all storms
// (p50-µs, p99-µs, max-µs) and the mean time to reconcile every key
// (drain-ms). ns/op is not meaningful and reported as 0.
func BenchmarkFreshDuringStorm(b *testing.B) {
	keys, targets := stormKeys(benchStorm)
	for _, delay := range []time.Duration{time.Millisecond, 100 * time.Millisecond} {
		c := benchStorm
		c.delay = delay
		for _, kind := range stormPeers {
			b.Run(fmt.Sprintf("delay=%s/impl=%s", delay, kind.name), func(b *testing.B) {
				var all []time.Duration
				var drain time.Duration
				storms := 0
				for b.Loop() {
					r := runStorm(b, kind, c, keys, targets, 5*time.Minute)
					all = append(all, r.latencies...)
					drain += r.drain
					storms++
				}
				b.ReportMetric(micros(percentile(all, 0.50)), "p50-µs")
				b.ReportMetric(micros(percentile(all, 0.90)), "p90-µs")
				b.ReportMetric(micros(percentile(all, 0.99)), "p99-µs")
				b.ReportMetric(micros(percentile(all, 1)), "max-µs")
				b.ReportMetric(float64(drain.Microseconds())/1000/float64(storms), "drain-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
