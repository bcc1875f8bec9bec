package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// loopKeys is the number of distinct keys reconciled in one round of
// BenchmarkWorkerLoop.
const loopKeys = 10_000

// loopPeers are the peers of BenchmarkWorkerLoop. controller-runtime and
// ctrlkit-prometheus record Prometheus metrics for every key; ctrlkit and
// handwritten record none, which is their default.
// handwritten-noop-provider shows what client-go's queue costs when it is
// given a name and a metrics provider that discards everything, as ctrlkit
// gives it by default.
var loopPeers = []peerKind{
	handwrittenPeer,
	handwrittenNoopProviderPeer,
	ctrlkitPeer,
	ctrlkitPrometheusPeer,
	controllerRuntimePeer,
	controllerRuntimeWorkqueuePeer,
}

// roundCounter is the no-op reconcile: it counts keys and signals when a
// round of n keys is complete.
type roundCounter struct {
	n     int64
	seen  atomic.Int64
	round chan struct{}
}

func newRoundCounter(n int) *roundCounter {
	return &roundCounter{n: int64(n), round: make(chan struct{}, 1)}
}

func (c *roundCounter) reconcile(string) {
	if c.seen.Add(1)%c.n == 0 {
		c.round <- struct{}{}
	}
}

// BenchmarkWorkerLoop adds 10,000 distinct keys and waits until a no-op
// reconcile has seen all of them; one op is one such round. Workers are
// running while keys are added, as they are when informers deliver events.
// ns/key is the wall time of a round divided by its keys; allocs/key counts
// every allocation in the process during the rounds (queue, loop and
// bookkeeping goroutines included).
func BenchmarkWorkerLoop(b *testing.B) {
	keys := newKeyTable(keyNames("foo", loopKeys))
	for _, workers := range []int{1, 2, 8} {
		for _, kind := range loopPeers {
			b.Run(fmt.Sprintf("workers=%d/impl=%s", workers, kind.name), func(b *testing.B) {
				rec := newRoundCounter(loopKeys)
				p := kind.new(b, keys, workers, rec.reconcile)
				stop := p.start(context.Background(), b)
				defer stop()

				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				rounds := 0
				for b.Loop() {
					for i := range loopKeys {
						p.add(i)
					}
					<-rec.round
					rounds++
				}
				runtime.ReadMemStats(&after)
				perKey := float64(rounds) * loopKeys
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perKey, "ns/key")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perKey, "allocs/key")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
