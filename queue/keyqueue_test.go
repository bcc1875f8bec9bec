package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// sizesOf reports the sizes of c's queue structures.
func sizesOf[K comparable](c *Controller[K]) keyQueueSizes { return c.base.sizes() }

// statuses returns where each key is.
func (q *keyQueue[K]) statuses() map[K]keyStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[K]keyStatus, len(q.keys))
	for k, s := range q.keys {
		out[k] = s.status
	}
	return out
}

// laneKeys returns the keys waiting in each lane, in order; in a fair
// queue, the lanes of each group in the order of their turns.
func (q *keyQueue[K]) laneKeys() (fresh, low []K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, l := range q.allLanes() {
		for _, e := range l.fresh.items[l.fresh.head:] {
			fresh = append(fresh, e.key)
		}
		for _, e := range l.low.items[l.low.head:] {
			if s := q.keys[e.key]; s.status == waitingLow && s.seq == e.seq {
				low = append(low, e.key)
			}
		}
	}
	return fresh, low
}

func newTestKeyQueue(t *testing.T) *keyQueue[string] {
	t.Helper()
	q := newKeyQueue[string]("", NoopMetrics{}, nil, nil)
	t.Cleanup(q.ShutDown)
	return q
}

// apply runs ops: "+k" adds k fresh, "-k" adds it at low priority.
func apply(q *keyQueue[string], ops ...string) {
	for _, op := range ops {
		if op[0] == '+' {
			q.Add(op[1:])
		} else {
			q.AddLow(op[1:])
		}
	}
}

// drain hands out every waiting key, marking each done.
func drain(t *testing.T, q *keyQueue[string]) []string {
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

func TestKeyQueueOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []string
		want []string
	}{
		{name: "fresh keys are FIFO", ops: []string{"+a", "+b", "+c"}, want: []string{"a", "b", "c"}},
		{name: "low keys are FIFO", ops: []string{"-a", "-b", "-c"}, want: []string{"a", "b", "c"}},
		{name: "fresh keys go first", ops: []string{"-a", "-b", "+c", "-d", "+e"}, want: []string{"c", "e", "a", "b", "d"}},
		{name: "fresh add promotes a waiting low key", ops: []string{"-a", "-b", "-c", "+b"}, want: []string{"b", "a", "c"}},
		{name: "low add leaves a waiting fresh key where it is", ops: []string{"+a", "+b", "-a"}, want: []string{"a", "b"}},
		{name: "duplicates are merged", ops: []string{"-a", "-a", "+b", "+b", "-b"}, want: []string{"b", "a"}},
		{name: "promoted then added low again stays fresh", ops: []string{"-a", "-b", "+a", "-a", "-c"}, want: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newTestKeyQueue(t)
			apply(q, tt.ops...)
			assert.Equal(t, len(tt.want), q.Len())
			assert.Equal(t, tt.want, drain(t, q))
			assert.Equal(t, keyQueueSizes{}, q.sizes(), "nothing is left behind")
		})
	}
}

// A key added while it is processed waits again after Done, in the lane of
// the highest priority among those adds.
func TestKeyQueueAddWhileProcessing(t *testing.T) {
	tests := []struct {
		name   string
		during []string
		want   []string
	}{
		{name: "no add: not queued again", during: nil, want: []string{"x"}},
		{name: "low add stays low", during: []string{"-a"}, want: []string{"x", "a"}},
		{name: "fresh add is fresh", during: []string{"+a"}, want: []string{"a", "x"}},
		{name: "low then fresh is fresh", during: []string{"-a", "+a"}, want: []string{"a", "x"}},
		{name: "fresh then low is fresh", during: []string{"+a", "-a"}, want: []string{"a", "x"}},
		{name: "many adds coalesce", during: []string{"-a", "-a", "+a", "-a", "+a"}, want: []string{"a", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newTestKeyQueue(t)
			q.Add("a")
			k, _ := q.Get()
			require.Equal(t, "a", k)
			apply(q, tt.during...)
			assert.Equal(t, 0, q.Len(), "a key being processed is not handed out again")
			q.AddLow("x")
			q.Done("a")
			assert.Equal(t, tt.want, drain(t, q))
			assert.Equal(t, keyQueueSizes{}, q.sizes())
		})
	}
}

// A steady stream of fresh keys delays the low lane but cannot starve it.
func TestKeyQueueLowLaneNotStarved(t *testing.T) {
	q := newTestKeyQueue(t)
	apply(q, "-low-0", "-low-1", "-low-2")
	var lowAt []int
	for i := range 40 {
		q.Add(fmt.Sprint("fresh-", i)) // one fresh key arrives per key served
		k, _ := q.Get()
		if k[:4] == "low-" {
			lowAt = append(lowAt, i)
		}
		q.Done(k)
	}
	assert.Equal(t, []int{freshPerLow, 2*freshPerLow + 1, 3*freshPerLow + 2}, lowAt,
		"one low key after every %d fresh ones", freshPerLow)
}

func TestKeyQueueShutdown(t *testing.T) {
	t.Run("waiting keys are still handed out, then shutdown", func(t *testing.T) {
		q := newTestKeyQueue(t)
		apply(q, "+a", "-b")
		q.ShutDown()
		apply(q, "+c", "-d")
		assert.True(t, q.ShuttingDown())
		assert.Equal(t, []string{"a", "b"}, drain(t, q))
		_, shutdown := q.Get()
		assert.True(t, shutdown)
	})
	t.Run("a blocked Get wakes up", func(t *testing.T) {
		q := newTestKeyQueue(t)
		got := make(chan bool)
		go func() { _, shutdown := q.Get(); got <- shutdown }()
		q.ShutDown()
		assert.True(t, <-got)
	})
	t.Run("ShutDownWithDrain waits for keys being processed", func(t *testing.T) {
		q := newTestKeyQueue(t)
		q.Add("a")
		k, _ := q.Get()
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		require.Eventually(t, q.ShuttingDown, 5*time.Second, time.Millisecond)
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while a key was being processed")
		default:
		}
		q.Done(k)
		<-drained
	})
	t.Run("ShutDown ends ShutDownWithDrain", func(t *testing.T) {
		q := newTestKeyQueue(t)
		q.Add("a")
		_, _ = q.Get()
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		require.Eventually(t, q.ShuttingDown, 5*time.Second, time.Millisecond)
		q.ShutDown()
		<-drained
	})
	t.Run("Done of a key not being processed is ignored", func(t *testing.T) {
		q := newTestKeyQueue(t)
		q.Add("a")
		q.Done("a")
		q.Done("b")
		assert.Equal(t, []string{"a"}, drain(t, q))
	})
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
	assert.LessOrEqual(t, f.head, compactAbove, "storage was compacted")
	for i := 3000; i < 5000; i++ {
		require.Equal(t, i, f.pop().key)
	}
	assert.Equal(t, 0, f.len())
	assert.Equal(t, 0, f.head)
	assert.Zero(t, cap(f.items), "the storage of the burst was released")
}

func TestQueueReleasesTheStorageOfABurst(t *testing.T) {
	q := newTestKeyQueue(t)
	for i := range 3 * compactAbove {
		q.Add(strconv.Itoa(i))
	}
	require.Len(t, drain(t, q), 3*compactAbove)
	q.mu.Lock()
	defer q.mu.Unlock()
	assert.Empty(t, q.keys)
	assert.Zero(t, q.keysHigh, "the map of the burst was replaced")
	assert.Zero(t, cap(q.lanes.fresh.items), "the lane's storage was released")
}

// testMetrics is a workqueue.MetricsProvider that keeps every value.
type testMetrics struct {
	NoopMetrics
	mu     sync.Mutex
	values map[string]float64
	obs    map[string][]float64
}

type testMetric struct {
	p    *testMetrics
	name string
}

func (m testMetric) Inc()              { m.p.add(m.name, 1) }
func (m testMetric) Dec()              { m.p.add(m.name, -1) }
func (m testMetric) Set(v float64)     { m.p.set(m.name, v) }
func (m testMetric) Observe(v float64) { m.p.observe(m.name, v) }

func (p *testMetrics) add(name string, d float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values[name] += d
}

func (p *testMetrics) set(name string, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values[name] = v
}

func (p *testMetrics) observe(name string, v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.obs[name] = append(p.obs[name], v)
}

func (p *testMetrics) value(name string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.values[name]
}

func (p *testMetrics) observations(name string) []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.obs[name])
}

func (p *testMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return testMetric{p, "depth"} }
func (p *testMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	return testMetric{p, "adds"}
}
func (p *testMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	return testMetric{p, "latency"}
}
func (p *testMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return testMetric{p, "work"}
}
func (p *testMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return testMetric{p, "unfinished"}
}
func (p *testMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return testMetric{p, "longest"}
}

// The queue's metrics mean what client-go's mean.
func TestKeyQueueMetrics(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := &testMetrics{values: map[string]float64{}, obs: map[string][]float64{}}
	q := newKeyQueue[string]("m", p, clk, nil)
	stop := make(chan struct{})
	var loop sync.WaitGroup
	loop.Go(func() { q.runMetrics(stop) })
	defer func() { close(stop); loop.Wait() }()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond, "the metrics loop started its ticker")

	q.Add("a")
	q.AddLow("b")
	q.Add("a") // already waiting: not counted again
	assert.Equal(t, 2.0, p.value("adds"))
	assert.Equal(t, 2.0, p.value("depth"))

	clk.Step(2 * time.Second)
	k, _ := q.Get()
	require.Equal(t, "a", k)
	assert.Equal(t, 1.0, p.value("depth"))
	assert.Equal(t, []float64{2}, p.observations("latency"))

	q.AddLow("a") // added while processing: due again, counted
	assert.Equal(t, 3.0, p.value("adds"))
	assert.Equal(t, 2.0, p.value("depth"))

	clk.Step(3 * time.Second)
	require.Eventually(t, func() bool { return p.value("longest") == 3 }, 5*time.Second, time.Millisecond,
		"the unfinished-work gauges are updated while a key is processed")
	assert.Equal(t, 3.0, p.value("unfinished"))
	q.Done("a")
	assert.Equal(t, []float64{3}, p.observations("work"))
	assert.Equal(t, 2.0, p.value("depth"), "a and b wait")

	clk.Step(time.Second)
	k, _ = q.Get()
	require.Equal(t, "b", k)
	k, _ = q.Get()
	require.Equal(t, "a", k)
	assert.Equal(t, []float64{2, 6, 4}, p.observations("latency"),
		"b waited since its add; a since its add while it was processed, not since Done")
	q.Done("a")
	q.Done("b")

	q.AddLow("c")
	clk.Step(time.Second)
	q.Add("c") // promoted: still due since the first add
	clk.Step(time.Second)
	k, _ = q.Get()
	require.Equal(t, "c", k)
	assert.Equal(t, []float64{2, 6, 4, 2}, p.observations("latency"))
	clk.Step(500 * time.Millisecond)
	q.Done("c")
	assert.Equal(t, []float64{3, 0, 0, 0.5}, p.observations("work"), "a, then a and b done as soon as handed out, then c")
}

// timerClock is a fake clock that counts the timers made from it. Between
// two steps of the clock the delaying queue's loop makes a timer only after
// it received a delayed key, which tells the test that it has.
type timerClock struct {
	*clocktesting.FakeClock
	timers atomic.Int64
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.timers.Add(1)
	return c.FakeClock.NewTimer(d)
}

// countingBase counts the adds that reach a keyQueue through the layers
// above it.
type countingBase struct {
	*keyQueue[string]
	adds atomic.Int64
}

func (c *countingBase) Add(key string) {
	c.keyQueue.Add(key)
	c.adds.Add(1)
}

// newModelQueue builds the queue the way newWorkqueue does, with a fake clock,
// a count of the adds coming down from the delaying queue, and a rate limiter
// whose delays the model can compute.
func newModelQueue(clk *timerClock, group func(string) string) (*countingBase, workqueue.TypedRateLimitingInterface[string]) {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)
	base := &countingBase{keyQueue: newKeyQueue("model", NoopMetrics{}, clk, group)}
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: "model", MetricsProvider: NoopMetrics{}, Clock: clk, Queue: base,
	})
	return base, workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{
		Name: "model", MetricsProvider: NoopMetrics{}, DelayingQueue: delaying,
	})
}

// queueModel is the queue's contract written as plainly as possible: two
// ordered lists per group of keys, the groups in the order of their turns,
// the state of each key, delayed adds by due time. Without fairness every
// key is in the group "".
type queueModel struct {
	group    func(string) string
	lanes    map[string]*modelLanes
	ring     []string // groups with waiting keys; ring[0] is served next
	status   map[string]keyStatus
	due      map[string]time.Time // delayed adds not yet due
	failures map[string]int
	shutDown bool
}

type modelLanes struct {
	fresh, low []string
	freshRun   int
}

func newQueueModel(group func(string) string) *queueModel {
	if group == nil {
		group = func(string) string { return "" }
	}
	return &queueModel{group: group, lanes: map[string]*modelLanes{}, status: map[string]keyStatus{},
		due: map[string]time.Time{}, failures: map[string]int{}}
}

func (m *queueModel) add(k string, low bool) {
	if m.shutDown {
		return
	}
	switch m.status[k] {
	case 0:
		m.push(k, low)
	case waitingLow:
		if !low {
			l := m.lanes[m.group(k)]
			l.low = slices.DeleteFunc(l.low, func(x string) bool { return x == k })
			l.fresh = append(l.fresh, k)
			m.status[k] = waitingFresh
		}
	case processing:
		m.status[k] = processingFresh
		if low {
			m.status[k] = processingLow
		}
	case processingLow:
		if !low {
			m.status[k] = processingFresh
		}
	}
}

func (m *queueModel) push(k string, low bool) {
	g := m.group(k)
	l, ok := m.lanes[g]
	if !ok {
		l = &modelLanes{}
		m.lanes[g] = l
		m.ring = append(m.ring, g) // a new group's turn comes last
	}
	if low {
		l.low = append(l.low, k)
		m.status[k] = waitingLow
	} else {
		l.fresh = append(l.fresh, k)
		m.status[k] = waitingFresh
	}
}

func (m *queueModel) get() string {
	g := m.ring[0]
	l := m.lanes[g]
	var k string
	if len(l.fresh) > 0 && (len(l.low) == 0 || l.freshRun < freshPerLow) {
		if len(l.low) > 0 {
			l.freshRun++
		} else {
			l.freshRun = 0
		}
		k, l.fresh = l.fresh[0], l.fresh[1:]
	} else {
		l.freshRun = 0
		k, l.low = l.low[0], l.low[1:]
	}
	m.ring = m.ring[1:]
	if len(l.fresh)+len(l.low) == 0 {
		delete(m.lanes, g)
	} else {
		m.ring = append(m.ring, g)
	}
	m.status[k] = processing
	return k
}

// waiting returns the keys waiting in each lane, group after group in the
// order of their turns.
func (m *queueModel) waiting() (fresh, low []string) {
	for _, g := range m.ring {
		fresh = append(fresh, m.lanes[g].fresh...)
		low = append(low, m.lanes[g].low...)
	}
	return fresh, low
}

func (m *queueModel) done(k string) {
	switch m.status[k] {
	case processing:
		delete(m.status, k)
	case processingFresh, processingLow:
		// Also after shutdown: the key was due before it.
		m.push(k, m.status[k] == processingLow)
	}
}

func (m *queueModel) addAfter(k string, at time.Time) {
	if m.shutDown {
		return
	}
	if old, ok := m.due[k]; !ok || at.Before(old) {
		m.due[k] = at
	}
}

// dueBy returns the delayed keys due at now, earliest first, and forgets
// them.
func (m *queueModel) dueBy(now time.Time) []string {
	var keys []string
	for k, at := range m.due {
		if !at.After(now) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return m.due[a].Compare(m.due[b]) })
	for _, k := range keys {
		delete(m.due, k)
	}
	return keys
}

func (m *queueModel) processing() []string {
	var keys []string
	for k, s := range m.status {
		if s >= processing {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// check compares the queue with the model after a step. It reports through
// t.Errorf, which any goroutine may call, and returns whether all held.
func (m *queueModel) check(t *testing.T, base *keyQueue[string], step string) bool {
	t.Helper()
	fresh, low := base.laneKeys()
	wantFresh, wantLow := m.waiting()
	s := base.sizes()
	groups := len(m.lanes)
	if base.group == nil {
		groups = 0 // an unfair queue keeps its one pair of lanes outside the groups
	}
	return assert.Equal(t, nilIfEmpty(wantFresh), nilIfEmpty(fresh), "fresh lanes after %s", step) &&
		assert.Equal(t, nilIfEmpty(wantLow), nilIfEmpty(low), "low lanes after %s", step) &&
		assert.Equal(t, len(wantFresh)+len(wantLow), base.Len(), "Len after %s", step) &&
		assert.Equal(t, m.status, base.statuses(), "key states after %s", step) &&
		assert.Equal(t, len(m.status), s.Keys, "keys remembered after %s", step) &&
		assert.Equal(t, len(wantFresh), s.Fresh, "fresh lane entries after %s", step) &&
		assert.Equal(t, groups, s.Groups, "groups remembered after %s", step) &&
		assert.LessOrEqual(t, s.Low, 2*len(wantLow)+65*max(1, groups), "low lane entries after %s (%d waiting)", step, len(wantLow))
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// The queue against its model: random operations from several goroutines,
// one step at a time, each followed by a comparison of the lanes, Len, the
// sizes of the internal structures and, for Get, the key handed out. The
// fair queue is checked with its keys in three groups.
func TestKeyQueueModel(t *testing.T) {
	byLastDigit := func(k string) string { return "g" + strconv.Itoa(int(k[len(k)-1]-'0')%3) }
	for _, fair := range []bool{false, true} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprint("fair=", fair, "/seed=", seed), func(t *testing.T) {
				var group func(string) string
				if fair {
					group = byLastDigit
				}
				runModel(t, seed, 1500, group)
			})
		}
	}
}

func runModel(t *testing.T, seed uint64, steps int, group func(string) string) {
	clk := &timerClock{FakeClock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0))}
	counted, q := newModelQueue(clk, group)
	base := counted.keyQueue
	m := newQueueModel(group)
	// wantAdds counts the adds that should have reached the base through
	// the layers above it: the test's own and the due delayed ones.
	var wantAdds int64
	// advance lets time pass; the delaying queue adds what became due. Its
	// loop may set its timer from a clock reading taken before the last
	// step, firing late: advance keeps stepping, a millisecond at a time,
	// until every add due by the model's clock has arrived.
	advance := func(d time.Duration) bool {
		clk.Step(d)
		deadline := time.Now().Add(10 * time.Second)
		for polls := 1; ; polls++ {
			for _, k := range m.dueBy(clk.Now()) {
				m.add(k, false)
				wantAdds++
			}
			if counted.adds.Load() == wantAdds {
				return true
			}
			if time.Now().After(deadline) {
				return assert.Equal(t, wantAdds, counted.adds.Load(), "adds from the delaying queue")
			}
			time.Sleep(100 * time.Microsecond) // polling the delaying queue's goroutine
			if polls%20 == 0 {
				clk.Step(time.Millisecond)
			}
		}
	}
	// delay runs a delayed add and waits until the delaying queue's loop
	// has taken the key, so that the clock never moves before it has. The
	// nanosecond step first keeps due times distinct: the delaying queue
	// orders keys due at the same time arbitrarily.
	delay := func(add func()) bool {
		if !advance(time.Nanosecond) {
			return false
		}
		before := clk.timers.Load()
		add()
		return m.shutDown || assert.Eventually(t, func() bool { return clk.timers.Load() > before },
			10*time.Second, 50*time.Microsecond, "the delaying queue took the key")
	}
	defer q.ShutDown()
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	keys := 3 + rng.IntN(30)
	key := func() string { return fmt.Sprint("k", rng.IntN(keys)) }

	var (
		mu   sync.Mutex // one step at a time, whichever goroutine takes it
		step int
		wg   sync.WaitGroup
	)
	delayed := 0
	one := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if step >= steps || t.Failed() {
			return false
		}
		step++
		switch r := rng.IntN(100); {
		case r < 25:
			k := key()
			q.Add(k)
			wantAdds++
			m.add(k, false)
			return m.check(t, base, "Add "+k)
		case r < 50:
			k := key()
			base.AddLow(k)
			m.add(k, true)
			return m.check(t, base, "AddLow "+k)
		case r < 55:
			// Distinct delays keep the due order unambiguous.
			delayed++
			k, d := key(), time.Duration(delayed)*time.Microsecond+time.Duration(rng.IntN(5))*time.Millisecond
			if !delay(func() { q.AddAfter(k, d) }) {
				return false
			}
			m.addAfter(k, clk.Now().Add(d))
			return m.check(t, base, "AddAfter "+k)
		case r < 60:
			k := key()
			if !delay(func() { q.AddRateLimited(k) }) {
				return false
			}
			if !m.shutDown {
				d := time.Second
				if n := m.failures[k]; n < 10 {
					d = time.Millisecond << n
				}
				m.failures[k]++
				m.addAfter(k, clk.Now().Add(d))
			}
			return m.check(t, base, "AddRateLimited "+k)
		case r < 63:
			k := key()
			q.Forget(k)
			delete(m.failures, k)
			return assert.Zero(t, q.NumRequeues(k))
		case r < 68:
			return advance(time.Duration(1+rng.IntN(4))*time.Millisecond) && m.check(t, base, "Step")
		case r < 88:
			if base.Len() == 0 {
				return true
			}
			want := m.get()
			got, shutdown := q.Get()
			return assert.False(t, shutdown) && assert.Equal(t, want, got, "Get at step %d", step) &&
				m.check(t, base, "Get "+got)
		case r < 99:
			busy := m.processing()
			if len(busy) == 0 {
				return true
			}
			k := busy[rng.IntN(len(busy))]
			q.Done(k)
			m.done(k)
			return m.check(t, base, "Done "+k)
		default:
			if step > steps*3/4 && !m.shutDown {
				q.ShutDown()
				m.shutDown = true
				m.due = map[string]time.Time{}
				return m.check(t, base, "ShutDown")
			}
		}
		return true
	}
	for range 4 {
		wg.Go(func() {
			for one() {
			}
		})
	}
	wg.Wait()
}

// The workqueue contract under real concurrency: producers at both
// priorities, with delays and retries, and several consumers; every key is
// processed, never by two consumers at once, and nothing is left behind.
func TestKeyQueueConcurrentContract(t *testing.T) {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Microsecond, time.Millisecond)
	base := newKeyQueue[string]("contract", NoopMetrics{}, nil, nil)
	q, _ := newWorkqueue(base, "contract", rl, NoopMetrics{}, nil)
	const producers, consumers, rounds, distinct = 8, 4, 300, 50
	var (
		mu        sync.Mutex
		inFlight  = map[string]bool{}
		processed = map[string]int{}
		overlaps  int
	)
	var workers sync.WaitGroup
	for range consumers {
		workers.Go(func() {
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
			for i := range rounds {
				k := fmt.Sprint("k", (i*7+p)%distinct)
				switch (i + p) % 5 {
				case 0:
					q.Add(k)
				case 1:
					q.AddAfter(k, time.Duration(i%3)*time.Microsecond)
				case 2:
					q.AddRateLimited(k)
				default:
					base.AddLow(k)
				}
			}
		})
	}
	prod.Wait()
	require.Eventually(t, func() bool {
		s := base.sizes()
		return s.Waiting == 0 && s.Processing == 0
	}, 10*time.Second, time.Millisecond, "every key was worked off")
	q.ShutDown()
	workers.Wait()
	assert.Zero(t, overlaps, "a key was processed by two consumers at once")
	assert.Len(t, processed, distinct, "every key was processed")
	assert.Equal(t, keyQueueSizes{}, base.sizes())
}
