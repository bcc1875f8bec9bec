package shard

import (
	"container/heap"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/go-logr/logr"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/queue/leader"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The simulation drives replicas of a group through schedules chosen by a
// seeded random scheduler on a simulated clock: every Lease request's
// latency and outcome (requests that hang until the client's timeout and
// land later or never, and a slow API server that answers one process, or
// every one, late but within the timeout), every watch delivery's delay,
// process pauses, partitions, steps of each process's wall clock and
// rate differences of its monotonic clock, kill -9, restarts under the
// same identity, joins and normal stops, and the objects' writes,
// deletions and moves between keys. One schedule in simMildEvery has only
// mild faults, those Lease-based ownership exists to ride out, under
// which no replica may lose its Lease and no key may move once the group
// settled; and every simWallReplayEvery-th schedule runs again with other
// wall clocks, and must make the same claims at the same times. The
// protocol code it runs is Membership.Run's loop (the driver), the
// replicas' core, Membership.apply and refreshed, mayGain, Gate (Claim,
// restrict, scan) and the sharded caches; only the goroutines and the
// client of Membership.Run are replaced by events, and the reflector and
// queue of the sharded informers by those of simcache_test.go. A failing seed replays exactly
// with -shard.sim.seed.
var (
	simSchedules = flag.Int("shard.sim.schedules", 0, "schedules the simulation explores (0: 5000, or 100 under the race detector)")
	simSeed      = flag.Uint64("shard.sim.seed", 0, "replay only this seed of the simulation")
	simFirst     = flag.Uint64("shard.sim.first", 1, "the seed of the first schedule explored (several processes can explore a range each)")
	simFor       = flag.Duration("shard.sim.for", 0, "explore schedules for this long instead of a count")
	simVerbose   = flag.Bool("shard.sim.verbose", false, "log every event of the replayed seed")
)

// Timing of the simulated group: the operator's defaults scaled as in the
// end-to-end tests.
const (
	simLease  = 4 * time.Second
	simRenew  = 3 * time.Second
	simRetry  = 500 * time.Millisecond
	simKeys   = 48
	simFaults = 30 * time.Second
	// simRestartMax is the longest a supervisor takes to restart a
	// process that exited.
	simRestartMax = 3 * time.Second
	// simSettle bounds the time from the last fault until every key is
	// owned by exactly one live replica, reconciled by it, and only the
	// live replicas' Leases are left. A replica whose renewals the faults
	// held up may still lose its Lease RenewDeadline after the last fault,
	// and its process is restarted within simRestartMax; the restarted
	// process sees the dead members' Leases then, judges them gone
	// LeaseDuration later, which outlasts its own takeover hold of
	// RenewDeadline, and deletes them after two; the third LeaseDuration
	// covers publication, the relists of the gains and a resync.
	simSettle = simRenew + simRestartMax + 3*simLease
	// simResync is how often every replica's controller adds every key.
	simResync = 2 * time.Second
	// simMargin is how long a cancelled reconcile may take to return and
	// a process holding a claim may be paused: together well inside
	// LeaseDuration - RenewDeadline.
	simMargin = (simLease - simRenew) / 4
	// simMildEvery: the schedules whose seed is 2 modulo simMildEvery
	// have only mild faults (see sim.mild).
	simMildEvery = 5
	// simWallReplayEvery: every schedule whose seed is a multiple of it
	// runs a second time with wall clocks that run backwards from
	// another date (sim.wallWarp): the claims must be the same.
	simWallReplayEvery = 50
)

type simEvent struct {
	at  time.Duration
	seq uint64
	// proc is the process the event runs in (nil: the API server or the
	// scheduler); it is deferred while the process is paused and dropped
	// once it is dead.
	proc *simProc
	name string
	fn   func()
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int)   { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)     { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() (x any)   { old := *q; x = old[len(old)-1]; *q = old[:len(old)-1]; return x }
func (q simQueue) peek() *simEvent { return q[0] }

// sim is one schedule.
type sim struct {
	t       testing.TB
	seed    uint64
	rng     *rand.Rand
	now     time.Duration
	seq     uint64
	events  simQueue
	verbose bool
	trace   []string
	// transforms: the informers have a transform that changes the
	// objects passed to them in place (three schedules in four).
	transforms bool

	// The API server.
	leases   map[string]*coordinationv1.Lease
	rv       uint64
	uids     int
	watchers []*simWatcher

	procs  []*simProc
	idents int
	keys   []string
	// keyHashes are the keys' hashes, in the order of keys; byLists holds
	// the keys each view owns by its member lists (ownedByLists).
	keyHashes []uint64
	byLists   map[*view][]bool
	holder    map[string]*simProc // key -> the process reconciling it
	// The objects (see simcache_test.go), by cache key: the latest
	// version of each, when it was written, and the last process that
	// wrote each key's object.
	objects map[string]*corev1.ConfigMap
	objRV   uint64
	// refObjects are the objects the keys' objects refer to, with when
	// each was created; refOf is the reference each key's object has.
	refObjects   map[string]*corev1.ConfigMap
	refCreatedAt map[string]time.Duration
	refOf        map[string]string
	deleteRate   float64
	writtenAt    map[string]time.Duration
	lastWriter   map[string]*simProc
	// calmReconciles holds, per key, the processes that reconciled it
	// since the faults stopped.
	calmReconciles map[string][]*simProc
	failure        string
	calmAt         time.Duration
	faulting       bool

	// The current fault settings. hungRate is the chance that a request
	// hangs until the client's timeout; while slowUntil is ahead, every
	// request answers late, taking up to slowShare of its timeout (each
	// process may have a slow period of its own).
	errRate, conflictRate, lostAnswerRate, hungRate float64
	maxLatency, maxWatchDelay                       time.Duration
	slowUntil                                       time.Duration
	slowShare                                       float64

	// mild: the schedule's faults are only those a Lease protocol must
	// ride out without anyone noticing: a process's lone hung requests
	// (at most one in any RenewDeadline, so that at most one request of
	// a retry in a row hangs), an API server slow for a while (answers
	// within half their timeout), steps of the wall clocks, rate
	// differences of the monotonic clocks, watches within 100ms, and the
	// fleet's own faults. No replica may then lose its Lease, and once the
	// group has settled (settled holds its members), no key or cluster may
	// move and every replica must keep seeing the same members.
	mild    bool
	settled []string
	// wallWarp: every wall clock runs backwards from another date. The
	// protocol must not notice: digest, which sums up every claim (who,
	// what, when), must be that of the schedule with the usual clocks.
	wallWarp bool
	digest   uint64

	// The fleet's world (simfleet_test.go).
	fleet *simFleetWorld

	stats simStats
}

type simStats struct {
	events, claims, handoffs, kills, restarts, joins, leaves, pauses, partitions, steps, lost, relists, writes int
	engagements, engaged, clusterClaims, drains                                                                int
	// hung: requests that hung until the client's timeout; slow: slow
	// periods of the API server; clockSteps: wall clock steps; mild and
	// wallReplays: schedules of mild faults, and those replayed with
	// other wall clocks.
	hung, slow, clockSteps, mild, wallReplays int
	// fleetHung: attempts to engage a member that hung until their
	// timeout.
	fleetHung int
}

// simProc is one process of a replica: an incarnation of an identity.
type simProc struct {
	s        *sim
	identity string
	name     string
	m        *Membership
	core     *core
	gate     *Gate[string]
	inf      *simInformer
	refInf   *simInformer
	fleet    *simFleet
	// owned are the keys it owned under ownedIn, the view of the last
	// check.
	owned   map[string]bool
	ownedIn *view

	d                    *driver
	dead, stopping, left bool
	// stopAsked: the process was told to stop normally.
	stopAsked        bool
	turnDue          bool
	wakeAt           time.Duration
	gateLast         *view
	pausedUntil      time.Duration
	partitionedUntil time.Duration
	// slowUntil: the API server answers this process late until then,
	// each request taking up to slowShare of its timeout.
	slowUntil time.Duration
	slowShare float64
	// hungAt is when its latest request that hung was sent; hung says
	// whether it has had one.
	hungAt     time.Duration
	hung       bool
	rate       float64 // of its monotonic clock against the simulation's
	monoAt     time.Duration
	monoBase   time.Duration
	wallOffset time.Duration

	watcher *simWatcher
	synced  bool // the informer delivered its initial list
	queue   []string
	queued  map[string]bool
	workers int
	active  map[string]*simReconcile
	// inFlight are its Lease updates sent and not yet applied or refused.
	inFlight map[uint64]published
	reqSeq   uint64
}

type simReconcile struct {
	key       string
	ctx       context.Context
	release   func()
	returning bool
	// cached: the cache held the key's object at its latest version at
	// the claim; only the reconcile's own deletion may remove it.
	cached bool
}

type simWatcher struct {
	proc *simProc
	// stalledUntil delays every delivery (a partition or a slow watch).
	stalledUntil time.Duration
	pending      []simDelivery
}

func (p *simProc) mono() time.Duration {
	return p.monoBase + time.Duration(float64(p.s.now-p.monoAt)*p.rate)
}

// after converts a duration on p's clock to the simulation's.
func (p *simProc) after(d time.Duration) time.Duration {
	return time.Duration(float64(d) / p.rate)
}

func newSim(t testing.TB, seed uint64, verbose bool) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), verbose: verbose, transforms: seed%4 != 0,
		mild:   seed%simMildEvery == 2,
		leases: map[string]*coordinationv1.Lease{}, holder: map[string]*simProc{}, calmReconciles: map[string][]*simProc{},
		objects: map[string]*corev1.ConfigMap{}, writtenAt: map[string]time.Duration{}, lastWriter: map[string]*simProc{},
		refObjects: map[string]*corev1.ConfigMap{}, refCreatedAt: map[string]time.Duration{}, refOf: map[string]string{}}
	for i := range simKeys {
		s.keys = append(s.keys, "ns/key-"+strconv.Itoa(i))
		s.keyHashes = append(s.keyHashes, hashKey(s.keys[i]))
	}
	s.byLists = map[*view][]bool{}
	s.addObjects()
	s.fleet = newSimFleetWorld(seed)
	return s
}

func (s *sim) logf(format string, args ...any) {
	if s.verbose {
		s.t.Logf("%9s "+format, append([]any{s.now.Round(time.Microsecond)}, args...)...)
	}
}

func (s *sim) fail(format string, args ...any) {
	if s.failure == "" {
		s.failure = fmt.Sprintf("at %s: ", s.now) + fmt.Sprintf(format, args...)
	}
}

func (s *sim) at(at time.Duration, proc *simProc, name string, fn func()) *simEvent {
	if at < s.now {
		at = s.now
	}
	s.seq++
	e := &simEvent{at: at, seq: s.seq, proc: proc, name: name, fn: fn}
	heap.Push(&s.events, e)
	return e
}

func (s *sim) after(d time.Duration, proc *simProc, name string, fn func()) {
	s.at(s.now+d, proc, name, fn)
}

func (s *sim) dur(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

func (s *sim) chance(p float64) bool { return s.rng.Float64() < p }

// run executes events until the simulation's time reaches end or a check
// fails.
func (s *sim) run(end time.Duration) {
	for s.events.Len() > 0 && s.failure == "" {
		e := s.events.peek()
		if e.at > end {
			break
		}
		heap.Pop(&s.events)
		if p := e.proc; p != nil {
			if p.dead {
				continue
			}
			if p.pausedUntil > e.at {
				// A paused process runs nothing; on waking it runs what
				// was due in an order of the scheduler's choice (a watch
				// still delivers its events in order).
				s.at(p.pausedUntil+s.dur(0, time.Millisecond), p, e.name, e.fn)
				continue
			}
		}
		s.now = e.at
		s.stats.events++
		if s.verbose && e.name != "" {
			who := "-"
			if e.proc != nil {
				who = e.proc.identity
			}
			s.logf("%s %s", who, e.name)
		}
		e.fn()
		for _, p := range s.procs {
			if !p.dead && p.pausedUntil <= s.now {
				p.inf.wake()
				p.refInf.wake()
				s.checkKept(p)
				s.checkRefGain(p)
			}
		}
	}
	if s.now < end {
		s.now = end
	}
}

// --- the API server ---

func (s *sim) nextRV() string { s.rv++; return strconv.FormatUint(s.rv, 10) }

// notify sends l to every watch. The watchers share one copy, which no
// one changes.
func (s *sim) notify(kind string, l *coordinationv1.Lease) {
	l = l.DeepCopy()
	for _, w := range s.watchers {
		if !w.proc.dead {
			w.push(simDelivery{kind: kind, leases: []*coordinationv1.Lease{l}, ready: s.now + s.dur(0, s.maxWatchDelay)})
		}
	}
}

// simDelivery is one event of a watch, or the initial list.
type simDelivery struct {
	kind   string
	leases []*coordinationv1.Lease
	ready  time.Duration
}

// push queues d behind the watch's earlier deliveries.
func (w *simWatcher) push(d simDelivery) {
	if n := len(w.pending); n > 0 {
		d.ready = max(d.ready, w.pending[n-1].ready)
	}
	w.pending = append(w.pending, d)
	if len(w.pending) == 1 {
		w.schedule()
	}
}

func (w *simWatcher) schedule() {
	p, d := w.proc, w.pending[0]
	p.s.at(max(d.ready, w.stalledUntil), p, "watch "+d.kind, w.pump)
}

// pump delivers the watch's next event, in order, unless the watch is
// stalled.
func (w *simWatcher) pump() {
	p := w.proc
	if w.stalledUntil > p.s.now {
		w.schedule()
		return
	}
	d := w.pending[0]
	w.pending = w.pending[1:]
	for _, l := range d.leases {
		if p.s.verbose {
			p.s.logf("%s sees %s %s@%s", p.identity, d.kind, l.Name, l.ResourceVersion)
		}
		kind := d.kind
		if kind == "list" {
			kind = "add"
		}
		p.deliver(kind, l)
		if p.dead {
			return
		}
	}
	if d.kind == "list" {
		p.synced = true
		p.kick()
	}
	if len(w.pending) > 0 {
		w.schedule()
	}
}

// request runs fn on the server after a latency, unless the process is
// partitioned or the request fails before it lands, and answers the
// process after another latency, unless the answer is lost; or the
// request hangs: the client times out while the server applies fn only
// later, or never. While the API server is slow for the process, the
// latencies add up to a share of the timeout.
func (s *sim) request(p *simProc, what string, timeout time.Duration, fn func() (*coordinationv1.Lease, error), answer func(*coordinationv1.Lease, error)) {
	fail := func(err error) {
		s.after(timeout, p, what+" timed out", func() { answer(nil, err) })
	}
	if p.partitionedUntil > s.now {
		fail(apierrors.NewTimeoutError("partitioned", 1))
		return
	}
	if s.hangs(p) {
		// The client gives up at its timeout; the server applies the
		// request later (and refuses a write if the Lease changed
		// meanwhile), or never.
		s.stats.hung++
		p.hung, p.hungAt = true, s.now
		s.logf("%s's %s hangs", p.identity, what)
		fail(apierrors.NewTimeoutError("hung", 1))
		if s.chance(0.5) {
			s.after(timeout+s.dur(0, timeout), nil, "", func() { _, _ = fn() })
		}
		return
	}
	if s.chance(s.errRate) {
		s.after(s.dur(0, s.maxLatency), p, what+" failed", func() {
			answer(nil, apierrors.NewInternalError(fmt.Errorf("injected")))
		})
		return
	}
	lat, back := s.dur(0, s.maxLatency), s.dur(0, s.maxLatency)
	if share := s.slowFor(p); share > 0 {
		// Late, but within the timeout.
		total := s.dur(time.Duration(share*float64(timeout))/2, time.Duration(share*float64(timeout)))
		lat = s.dur(0, total)
		back = total - lat
	}
	if lat >= timeout {
		lat = timeout - time.Millisecond
	}
	s.after(lat, nil, "", func() {
		l, err := fn()
		if s.chance(s.lostAnswerRate) || p.partitionedUntil > s.now {
			fail(apierrors.NewTimeoutError("answer lost", 1))
			return
		}
		if lat+back >= timeout {
			fail(apierrors.NewTimeoutError("slow", 1))
			return
		}
		s.after(back, p, what+" answered", func() { answer(l, err) })
	})
}

// hangs decides whether p's next request hangs. In a schedule of mild
// faults a process's requests hang at most once in any RenewDeadline: a
// request that hangs is followed by its retry, which answers.
func (s *sim) hangs(p *simProc) bool {
	if s.mild && p.hung && s.now < p.hungAt+simRenew {
		return false
	}
	return s.hungRate > 0 && s.chance(s.hungRate)
}

// slowFor returns the share of a request's timeout that the API server
// takes to answer p while it is slow for p (0: it is not).
func (s *sim) slowFor(p *simProc) float64 {
	switch {
	case p.slowUntil > s.now:
		return p.slowShare
	case s.slowUntil > s.now:
		return s.slowShare
	}
	return 0
}

// slowDown makes the API server slow for p (nil: for every process) for
// a while: each answer takes up to a share of its timeout, at most half
// in a schedule of mild faults, else nearly all of it.
func (s *sim) slowDown(p *simProc) {
	s.stats.slow++
	share := 0.5
	if !s.mild && s.chance(0.5) {
		share = 0.99
	}
	until := min(s.now+s.dur(0, 2*simLease), s.calmAt)
	if p == nil {
		s.slowUntil, s.slowShare = until, share
		s.logf("the API server is slow (%.0f%%) until %s", 100*share, until)
		return
	}
	p.slowUntil, p.slowShare = until, share
	s.logf("the API server is slow (%.0f%%) for %s until %s", 100*share, p.identity, until)
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (s *sim) create(l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if _, ok := s.leases[l.Name]; ok {
		return nil, apierrors.NewAlreadyExists(leaseResource, l.Name)
	}
	l = l.DeepCopy()
	s.uids++
	l.UID = types.UID("uid-" + strconv.Itoa(s.uids))
	l.ResourceVersion = s.nextRV()
	s.leases[l.Name] = l
	s.notify("add", l)
	return l.DeepCopy(), nil
}

func (s *sim) update(l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	cur, ok := s.leases[l.Name]
	switch {
	case !ok:
		return nil, apierrors.NewNotFound(leaseResource, l.Name)
	case cur.ResourceVersion != l.ResourceVersion || s.chance(s.conflictRate):
		return nil, apierrors.NewConflict(leaseResource, l.Name, fmt.Errorf("stale"))
	}
	l = l.DeepCopy()
	l.UID = cur.UID
	l.ResourceVersion = s.nextRV()
	s.leases[l.Name] = l
	s.notify("update", l)
	return l.DeepCopy(), nil
}

func (s *sim) get(name string) (*coordinationv1.Lease, error) {
	cur, ok := s.leases[name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	return cur.DeepCopy(), nil
}

func (s *sim) delete(name string, uid types.UID, rv string) error {
	cur, ok := s.leases[name]
	switch {
	case !ok:
		return apierrors.NewNotFound(leaseResource, name)
	case uid != "" && (cur.UID != uid || cur.ResourceVersion != rv):
		return apierrors.NewConflict(leaseResource, name, fmt.Errorf("precondition"))
	}
	delete(s.leases, name)
	s.notify("delete", cur)
	return nil
}

// --- replicas ---

func (s *sim) identity() string {
	s.idents++
	return "replica-" + strconv.Itoa(s.idents)
}

// start starts a process of identity.
func (s *sim) start(identity string) *simProc {
	p := &simProc{s: s, identity: identity, rate: 1 + (s.rng.Float64()-0.5)*0.004, monoBase: s.dur(0, time.Hour), monoAt: s.now,
		queued: map[string]bool{}, workers: 2, active: map[string]*simReconcile{}, inFlight: map[uint64]published{}}
	// Most hosts' clocks agree within milliseconds; some are off by up to
	// an hour.
	p.wallOffset = s.dur(0, 50*time.Millisecond)
	if s.chance(0.3) {
		p.wallOffset = s.dur(0, time.Hour)
	}
	cfg := Config{Client: &kubernetes.Clientset{}, Namespace: "ops", Group: "g", Identity: identity,
		LeaseDuration: simLease, RenewDeadline: simRenew, RetryPeriod: simRetry, Metrics: simMetrics{s: s}}
	m, err := New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	m.now, m.wall = p.mono, p.wall
	p.m, p.core, p.name = m, m.core, m.lease
	p.core.incarnation = identity + "." + strconv.Itoa(len(s.procs))
	p.gate = NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return s.keys }})
	// The watcher holds the process's network state; its Lease watch
	// starts when the Membership starts its informer.
	p.watcher = &simWatcher{proc: p}
	p.inf = newSimInformer(p)
	p.refInf = newSimRefInformer(p, p.inf)
	p.fleet = newSimFleet(p)
	s.procs = append(s.procs, p)

	// Membership.Run's loop, with the simulation as its API server, its
	// informer and its clock.
	p.d = newDriver(m, simEffects{p}, logr.Discard())
	p.d.start()
	p.afterTurn()
	p.scheduleResync()
	return p
}

// simMetrics counts the publications of new member lists.
type simMetrics struct {
	noopMetrics
	s *sim
}

func (m simMetrics) IncHandoffs(string) { m.s.stats.handoffs++ }

// simEffects carries out a driver's requests on the simulated API server.
type simEffects struct{ p *simProc }

func (e simEffects) send(r request) {
	p, s := e.p, e.p.s
	var fn func() (*coordinationv1.Lease, error)
	switch r.Kind {
	case reqCreate, reqCreateLeft, reqRenew, reqLeave:
		s.stats.writes++
		op := s.update
		if r.Kind == reqCreate || r.Kind == reqCreateLeft {
			op = s.create
		}
		// Until it lands or is refused, the list it publishes may become
		// what the others read.
		pub, _ := parsePublished(r.Lease.Annotations[AnnotationView])
		p.reqSeq++
		req := p.reqSeq
		p.inFlight[req] = pub
		fn = func() (*coordinationv1.Lease, error) {
			delete(p.inFlight, req)
			return op(r.Lease)
		}
		answer := func(l *coordinationv1.Lease, err error) {
			delete(p.inFlight, req) // lost on the way: it never lands
			p.answered(r, l, err)
		}
		s.request(p, r.Kind.String()+" "+strconv.FormatUint(r.Seq, 10), simTimeout(r), fn, answer)
		return
	case reqTakeOver, reqRefresh, reqRefreshLeave:
		fn = func() (*coordinationv1.Lease, error) { return s.get(p.name) }
	case reqDeleteOwn, reqDeleteStale:
		fn = func() (*coordinationv1.Lease, error) {
			return nil, s.delete(r.Stale.name, r.Stale.uid, r.Stale.resourceVersion)
		}
	}
	s.request(p, r.Kind.String(), simTimeout(r), fn, func(l *coordinationv1.Lease, err error) {
		if r.Kind == reqDeleteStale {
			s.logf("%s deleted %s@%s: %v", p.identity, r.Stale.name, r.Stale.resourceVersion, err)
		}
		p.answered(r, l, err)
	})
}

// simTimeout is how long the client waits for r's answer: until the
// deadline of the context the Membership sends r with (request.context),
// which is r.Timeout away; a context without a deadline waits for ever,
// and a request that hangs or a slow API server then never answers.
func simTimeout(r request) time.Duration {
	ctx, cancel := r.context(context.Background())
	defer cancel()
	deadline, ok := ctx.Deadline()
	if !ok {
		return simForever
	}
	// The simulated time ignores the real time the deadline was set in,
	// so that schedules replay alike; a deadline further away than
	// r.Timeout counts.
	return max(r.Timeout, time.Until(deadline))
}

// simForever is a timeout that no schedule reaches.
const simForever = 1000 * time.Hour

// startInformer starts the Lease informer: it lists, then watches.
func (e simEffects) startInformer() {
	p, s := e.p, e.p.s
	w := p.watcher
	s.watchers = append(s.watchers, w)
	list := make([]*coordinationv1.Lease, 0, len(s.leases))
	for _, name := range sortedKeys(s.leases) {
		list = append(list, s.leases[name].DeepCopy())
	}
	w.push(simDelivery{kind: "list", leases: list, ready: s.now + s.dur(0, s.maxWatchDelay)})
}

func (p *simProc) answered(r request, l *coordinationv1.Lease, err error) {
	if p.dead {
		return
	}
	if err != nil {
		l = &coordinationv1.Lease{} // as a typed client answers an error
	}
	p.d.answered(r, l, err)
	p.kick()
}

// wall reads p's wall clock: the simulation's time plus p's offset,
// which steps; with the wall clocks warped, the same readings run
// backwards from another date.
func (p *simProc) wall() time.Time {
	if p.s.wallWarp {
		return time.Date(2091, 7, 1, 0, 0, 0, 0, time.UTC).Add(-3 * (p.s.now + p.wallOffset))
	}
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(p.s.now + p.wallOffset)
}

// stepWall steps p's wall clock forward or back (an NTP correction, a
// VM resumed, an administrator), while its monotonic clock goes on.
func (p *simProc) stepWall() {
	s := p.s
	span := []time.Duration{2 * time.Second, 10 * time.Minute, 48 * time.Hour}[s.rng.IntN(3)]
	step := time.Duration(s.rng.Int64N(int64(2*span))) - span
	p.wallOffset += step
	s.stats.clockSteps++
	s.logf("%s's wall clock steps by %s", p.identity, step)
}

// setRate changes the rate of p's monotonic clock from now on.
func (p *simProc) setRate(rate float64) {
	p.monoBase, p.monoAt, p.rate = p.mono(), p.s.now, rate
}

func (p *simProc) withCore(fn func(c *core)) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	fn(p.core)
}

func (p *simProc) alive() bool { return !p.dead && !p.left }

// deliver hands a watch event to the Membership's informer handler.
func (p *simProc) deliver(kind string, l *coordinationv1.Lease) {
	var err error
	if kind == "delete" {
		err = p.m.forget(l)
	} else {
		err = p.m.observe(l)
	}
	if err != nil {
		p.d.lose(err)
		p.turn()
		return
	}
	p.kick()
}

// kick runs a turn of the loop soon, as Run's loop does when its
// membership is kicked.
func (p *simProc) kick() {
	if p.turnDue {
		return
	}
	p.turnDue = true
	p.s.after(p.s.dur(0, 2*time.Millisecond), p, "turn", func() {
		p.turnDue = false
		p.turn()
	})
}

func (p *simProc) scheduleResync() {
	p.s.after(p.after(simResync), p, "", func() {
		for _, k := range p.s.keys {
			p.add(k)
		}
		p.fleet.resync()
		p.scheduleResync()
	})
}

// turn is one turn of Run's loop: the driver runs what is due.
func (p *simProc) turn() {
	if p.dead || p.d == nil {
		return
	}
	p.s.stats.steps++
	p.d.synced = p.synced
	before := p.m.base
	p.d.turn()
	if p.m.base != before && p.m.base != nil {
		p.s.checkGain(p, before, p.m.base)
	}
	p.afterTurn()
}

// afterTurn lets cancelled reconciles return, enqueues the keys the
// replica gained, schedules the next turn that is due without news, and
// ends the process once Run returns.
func (p *simProc) afterTurn() {
	p.cancelled()
	p.drainGate()
	p.fleet.drainGate()
	p.fleet.poll()
	if p.d.phase == phaseLeaving {
		p.left = true
	}
	p.stopping = p.d.stopping()
	if p.stopping && !p.stopAsked && p.s.mild {
		p.s.fail("%s gave up its Lease under mild faults only: %v", p.identity, p.d.result)
	}
	if done, err := p.d.done(); done {
		p.exited(err)
		return
	}
	// One timer, as Run's: a turn that finds the timer set for later
	// sets it earlier; the timer's own turn sets it anew.
	if w := p.d.wake(); w > 0 && (p.wakeAt == 0 || w < p.wakeAt) {
		p.wakeAt = w
		p.s.after(p.after(max(0, w-p.mono()))+time.Microsecond, p, "wake", func() {
			if p.wakeAt == w {
				p.wakeAt = 0
				p.turn()
			}
		})
	}
}

// cancelled schedules the return of every reconcile whose claim was
// revoked: a reconcile honours its context within simMargin.
func (p *simProc) cancelled() {
	for _, k := range sortedKeys(p.active) {
		r := p.active[k]
		if r.returning || r.ctx.Err() == nil {
			continue
		}
		r.returning = true
		p.s.after(p.s.dur(0, simMargin), p, "reconcile of "+k+" returns cancelled", func() { p.finish(r) })
	}
}

// lose is what the Lease informer's handler or a step does when the Lease
// is lost: every claim is revoked, and Run returns once they are released.
func (p *simProc) lose(err error) {
	if p.stopping {
		return
	}
	p.s.logf("%s lost: %v", p.identity, err)
	p.d.lose(err)
	p.turn()
}

// stop is a normal stop: ctx is cancelled.
func (p *simProc) stop() {
	if p.stopping {
		return
	}
	p.stopAsked = true
	p.s.stats.leaves++
	p.d.stop()
	p.turn()
}

// exited is Run returning: after a normal stop the process is gone; after
// an error it exits and its supervisor restarts it, always once the
// faults have stopped.
func (p *simProc) exited(err error) {
	if p.dead {
		return
	}
	if err == nil {
		p.left = true
		p.dead = true
		return
	}
	p.s.stats.lost++
	p.s.logf("%s exits: %v", p.identity, err)
	if !errors.Is(err, leader.ErrLeaseLost) && !p.stopAsked {
		// Every fault simulated may pass: Run must ride it out.
		p.s.fail("%s's Run returned %v", p.identity, err)
	}
	p.kill()
	s := p.s
	if !s.faulting || s.chance(0.5) {
		s.after(s.dur(time.Second, simRestartMax), nil, "", func() {
			// A process of the identity that is stopping does not keep
			// the supervisor from restarting this one.
			if !slices.ContainsFunc(s.procs, func(q *simProc) bool { return q.identity == p.identity && !q.dead && !q.stopping }) {
				s.stats.restarts++
				s.logf("%s restarts", p.identity)
				s.start(p.identity)
			}
		})
	}
}

// --- the controller ---

func (p *simProc) add(key string) {
	if !p.alive() || p.stopping || p.queued[key] || !p.gate.Owns(key) {
		return
	}
	p.queued[key] = true
	p.queue = append(p.queue, key)
	p.work()
}

// AddLowPriority, Add and AddAfter make the process a queue.Enqueuer for
// the Gate's scans.
func (p *simProc) AddLowPriority(key string)            { p.add(key) }
func (p *simProc) Add(key string)                       { p.add(key) }
func (p *simProc) AddAfter(key string, _ time.Duration) { p.add(key) }

func (p *simProc) drainGate() {
	select {
	case <-p.gate.wake:
		p.gateLast = p.gate.scan(p, "sim", p.gateLast)
	default:
	}
}

// work hands queued keys to idle workers, as the queue does: a key being
// reconciled waits until its reconcile returns.
func (p *simProc) work() {
	for i := 0; i < len(p.queue) && len(p.active) < p.workers; {
		key := p.queue[i]
		if _, busy := p.active[key]; busy {
			i++
			continue
		}
		p.queue = slices.Delete(p.queue, i, i+1)
		delete(p.queued, key)
		p.reconcile(key)
	}
}

func (p *simProc) reconcile(key string) {
	s := p.s
	ctx, release, ok := p.gate.Claim(context.Background(), key)
	if !ok {
		return
	}
	s.stats.claims++
	if other := s.holder[key]; other != nil {
		s.fail("%s claimed %s while %s held it", p.identity, key, other.identity)
	}
	// Every list of its Lease that the others may read, now or once a
	// write in flight lands, must give it the key: its own writes. (A
	// second process of its identity may have written the Lease since;
	// that process claims nothing until this one has stopped, which the
	// check of holders above shows.)
	for _, pub := range s.mayShow(p) {
		if pub.left || Assign(pub.members, key) != p.name {
			s.fail("%s claimed %s, which its Lease's list %v (on the server or on its way) does not give it", p.identity, key, pub)
		}
	}
	s.checkFresh(p, key)
	if s.settled != nil && Assign(s.settled, key) != p.name {
		s.fail("%s claimed %s under mild faults only, after the group %v settled with its owner %s", p.identity, key, s.settled, Assign(s.settled, key))
	}
	s.note(p, key)
	s.holder[key] = p
	r := &simReconcile{key: key, ctx: ctx, release: release, cached: s.current(p, key)}
	p.active[key] = r
	p.s.reconciled(p, key)
	hold := s.dur(0, 20*time.Millisecond)
	if s.chance(0.05) {
		hold = s.dur(0, 3*time.Second) // a slow reconcile, which a handoff must wait for
	}
	// It writes its object once, before it returns, even when cancelled.
	s.after(s.dur(0, hold), p, "", func() {
		if p.active[key] == r {
			s.write(p, key)
		}
	})
	s.after(hold, p, "", func() {
		if !r.returning {
			p.finish(r)
		}
	})
}

// mayShow returns the member lists that p's Lease shows the others now
// (if p wrote it last) or may show once one of p's writes in flight lands.
func (s *sim) mayShow(p *simProc) []published {
	var lists []published
	if l, ok := s.leases[p.name]; ok && parseStamp(l.Annotations[annotationWriter]).incarnation == p.core.incarnation {
		pub, _ := parsePublished(l.Annotations[AnnotationView])
		lists = append(lists, pub)
	}
	for _, req := range sortedKeys(p.inFlight) {
		lists = append(lists, p.inFlight[req])
	}
	return lists
}

func (p *simProc) finish(r *simReconcile) {
	if p.active[r.key] != r {
		return
	}
	delete(p.active, r.key)
	if p.s.holder[r.key] == p {
		delete(p.s.holder, r.key)
	}
	r.release()
	p.kick() // Run's loop hears of the release
	p.work()
}

// kill is kill -9: the process and its claims are gone at once; its
// requests already sent may still land.
func (p *simProc) kill() {
	p.dead = true
	p.fleet.killed()
	for k := range p.active {
		if p.s.holder[k] == p {
			delete(p.s.holder, k)
		}
	}
}

// note adds a claim to the schedule's digest.
func (s *sim) note(p *simProc, key string) {
	for _, x := range []uint64{uint64(s.now), hashKey(p.core.incarnation), hashKey(key)} {
		s.digest = (s.digest ^ x) * 1099511628211
	}
}

func (s *sim) reconciled(p *simProc, key string) {
	if !s.faulting {
		s.calmReconciles[key] = append(s.calmReconciles[key], p)
	}
}

func (s *sim) live() []*simProc {
	var live []*simProc
	for _, p := range s.procs {
		if p.alive() && !p.stopping {
			live = append(live, p)
		}
	}
	return live
}

// randomSettings picks the network's behaviour for a while.
func (s *sim) randomSettings() {
	s.maxLatency = []time.Duration{time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond}[s.rng.IntN(4)]
	s.maxWatchDelay = []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 2500 * time.Millisecond}[s.rng.IntN(4)]
	s.errRate = []float64{0, 0.05, 0.2}[s.rng.IntN(3)]
	s.conflictRate = []float64{0, 0.05}[s.rng.IntN(2)]
	s.lostAnswerRate = []float64{0, 0.05}[s.rng.IntN(2)]
	s.hungRate = []float64{0, 0.03, 0.1}[s.rng.IntN(3)]
}

// mildSettings picks the network's behaviour for a schedule of mild
// faults: fast watches, no errors, conflicts or lost answers, and
// requests that hang now and then.
func (s *sim) mildSettings() {
	s.maxLatency = []time.Duration{time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}[s.rng.IntN(3)]
	s.maxWatchDelay = []time.Duration{time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond}[s.rng.IntN(3)]
	s.hungRate = []float64{0.02, 0.1, 0.3}[s.rng.IntN(3)]
	s.errRate, s.conflictRate, s.lostAnswerRate = 0, 0, 0
}

// mildFault injects one mild fault chosen at random.
func (s *sim) mildFault() {
	live := s.live()
	if len(live) == 0 {
		return
	}
	p := live[s.rng.IntN(len(live))]
	switch s.rng.IntN(5) {
	case 0, 1:
		p.stepWall()
	case 2:
		if s.chance(0.3) {
			p = nil
		}
		s.slowDown(p)
	case 3:
		p.setRate(1 + (s.rng.Float64()-0.5)*0.004)
	default:
		s.mildSettings()
	}
}

// watchSettling checks a schedule of mild faults every 250ms: until the
// group has settled, whether it has (every replica sees every live
// process as a member, and every key is owned by its owner under them);
// then, that every replica still sees those members.
func (s *sim) watchSettling() {
	if s.failure != "" {
		return
	}
	live := s.live()
	var names []string
	for _, p := range live {
		names = append(names, p.name)
	}
	slices.Sort(names)
	if s.settled != nil {
		for _, p := range live {
			if got := p.m.Members(); !slices.Equal(got, s.settled) {
				s.fail("%s sees members %v under mild faults only, after the group %v settled", p.identity, got, s.settled)
				return
			}
		}
	} else if s.isSettled(live, names) {
		s.settled = names
		s.logf("the group %v settled", names)
	} else if s.now >= s.calmAt {
		s.fail("the group did not settle in %s of mild faults only", s.calmAt)
		return
	}
	s.after(250*time.Millisecond, nil, "", s.watchSettling)
}

func (s *sim) isSettled(live []*simProc, names []string) bool {
	for _, p := range live {
		if !p.m.HasSynced() || !slices.Equal(p.m.Members(), names) {
			return false
		}
	}
	for _, key := range s.keys {
		owner := Assign(names, key)
		if !slices.ContainsFunc(live, func(p *simProc) bool { return p.name == owner && p.gate.Owns(key) }) {
			return false
		}
	}
	return true
}

// fault injects one fault chosen at random.
func (s *sim) fault() {
	live := s.live()
	var dead []string
	for _, p := range s.procs {
		if p.dead && !p.left && !slices.ContainsFunc(s.procs, func(q *simProc) bool { return q.identity == p.identity && !q.dead }) &&
			!slices.Contains(dead, p.identity) {
			dead = append(dead, p.identity)
		}
	}
	pick := func() *simProc { return live[s.rng.IntN(len(live))] }
	if s.mild {
		s.mildFault()
		return
	}
	switch n := s.rng.IntN(15); {
	case n == 0 && len(live) < 6:
		s.stats.joins++
		s.start(s.identity())
	case n == 1 && len(live) > 1:
		p := pick()
		s.logf("%s stops", p.identity)
		p.stop()
	case n == 2 && len(live) > 1:
		p := pick()
		s.stats.kills++
		s.logf("%s is killed", p.identity)
		p.kill()
	case n == 3 && len(dead) > 0:
		s.stats.restarts++
		id := dead[s.rng.IntN(len(dead))]
		s.logf("%s restarts", id)
		s.start(id)
	case n == 4 && len(live) > 0:
		p := pick()
		d := s.dur(0, 3*simLease)
		if len(p.active) > 0 || len(p.fleet.active) > 0 {
			// A process paused while it reconciles is the one case a
			// lease cannot cover beyond its margin.
			d = s.dur(0, simMargin)
		}
		s.stats.pauses++
		p.pausedUntil = max(p.pausedUntil, min(s.now+d, s.calmAt))
		s.logf("%s paused until %s", p.identity, p.pausedUntil)
	case n == 5 && len(live) > 0:
		p := pick()
		s.stats.partitions++
		p.partitionedUntil = min(s.now+s.dur(0, 2*simLease), s.calmAt)
		p.watcher.stalledUntil = max(p.watcher.stalledUntil, p.partitionedUntil)
		s.logf("%s cut off until %s", p.identity, p.partitionedUntil)
	case n == 6 && len(live) > 0:
		pick().stepWall()
	case n == 7 && len(live) > 0:
		p := pick()
		p.watcher.stalledUntil = max(p.watcher.stalledUntil, min(s.now+s.dur(0, 2*time.Second), s.calmAt))
	case n == 8 && len(live) > 0:
		// A watch that falls behind for longer than a relist takes: the
		// relist's answer and the events after it wait.
		p := pick()
		p.watcher.stalledUntil = max(p.watcher.stalledUntil, min(s.now+s.dur(2*time.Second, 2*simLease), s.calmAt))
		s.logf("%s's watches stall until %s", p.identity, p.watcher.stalledUntil)
	case n == 9 && len(live) > 0:
		// A second process of a running replica's identity (a pod
		// restarted while its former container still runs).
		p := pick()
		s.stats.restarts++
		s.logf("%s starts again while it runs", p.identity)
		q := s.start(p.identity)
		if s.chance(0.5) {
			// ... and is stopped again soon (a rollout undone, say),
			// while the former process may still hold keys.
			s.after(s.dur(0, simLease), nil, "", func() {
				if s.now < s.calmAt && q.alive() {
					s.logf("%s's second process stops", q.identity)
					q.stop()
				}
			})
		}
	case n == 10 && len(live) > 0:
		// An administrator deletes a live member's Lease.
		p := pick()
		s.logf("%s's Lease is deleted by hand", p.identity)
		_ = s.delete(p.name, "", "")
	case n == 11 && len(live) > 0:
		p := pick()
		if s.chance(0.3) {
			p = nil
		}
		s.slowDown(p)
	case n == 12 && len(live) > 0:
		pick().setRate(1 + (s.rng.Float64()-0.5)*0.004)
	default:
		s.randomSettings()
	}
}

func (s *sim) scheduleFaults() {
	s.after(s.dur(0, 3*time.Second), nil, "", func() {
		if s.now >= s.calmAt {
			return
		}
		s.fault()
		s.scheduleFaults()
	})
}

// runSchedule runs one schedule and returns a description of the first
// violated invariant, or "".
func (s *sim) runSchedule() string {
	s.randomSettings()
	if s.mild {
		s.stats.mild++
		s.mildSettings()
	}
	s.faulting = true
	s.calmAt = simFaults
	if s.mild {
		// The group settles within a few seconds; half the time of
		// faults gives every process dozens of renewals after that.
		s.calmAt = simFaults / 2
	}
	for range 3 + s.rng.IntN(4) {
		s.start(s.identity())
	}
	if s.mild {
		s.watchSettling()
	}
	s.scheduleFaults()
	s.scheduleFleetFaults()
	s.scheduleMoves()
	s.scheduleRefWrites()
	s.run(s.calmAt)
	if s.failure != "" {
		return s.failure
	}
	s.faulting = false
	s.maxLatency, s.maxWatchDelay = 5*time.Millisecond, 5*time.Millisecond
	s.errRate, s.conflictRate, s.lostAnswerRate, s.hungRate = 0, 0, 0, 0
	if len(s.live()) == 0 {
		s.start(s.identity())
	}
	s.run(s.calmAt + simSettle)
	if s.failure != "" {
		return s.failure
	}
	if failure := s.checkSettled(); failure != "" {
		return failure
	}
	s.run(s.calmAt + simSettle + simFleetSettle)
	if s.failure != "" {
		return s.failure
	}
	var names []string
	for _, p := range s.live() {
		names = append(names, p.name)
	}
	return s.checkFleetSettled(names)
}

// checkSettled checks the state simSettle after the last fault.
func (s *sim) checkSettled() string {
	live := s.live()
	var names []string
	for _, p := range live {
		names = append(names, p.name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "no replica is live after the faults"
	}
	for _, p := range live {
		if got := p.m.Members(); !slices.Equal(got, names) {
			return fmt.Sprintf("%s sees members %v, want %v", p.identity, got, names)
		}
	}
	if got := sortedKeys(s.leases); !slices.Equal(got, names) {
		return fmt.Sprintf("Leases left %v, want those of the live members %v", got, names)
	}
	for _, key := range s.keys {
		owner := Assign(names, key)
		if !slices.ContainsFunc(s.calmReconciles[key], func(p *simProc) bool { return p.name == owner && p.alive() }) {
			return fmt.Sprintf("%s not reconciled by its owner %s within %s of the last fault", key, owner, simSettle)
		}
	}
	return s.checkCaches()
}

// TestSimulation explores seeded schedules of a group under faults and
// checks after every event that no key is held by two processes and that
// a claim is backed by every list its Lease may show; and, once the
// faults stop, that every key is owned by exactly one live replica and
// reconciled by it within simSettle, and that only the live members'
// Leases are left. In the schedules of mild faults it also checks that
// no replica gives up its Lease and that no key moves once the group has
// settled; every simWallReplayEvery-th schedule runs again with other
// wall clocks and must make the same claims.
func TestSimulation(t *testing.T) {
	t.Parallel()
	// The schedules allocate much and keep little: collecting less often
	// cuts the simulation's CPU by a quarter, for some 60 MB.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	n := *simSchedules
	if n == 0 {
		n = 5000
		if raceEnabled {
			n = 100
		}
	}
	first := *simFirst
	if *simSeed != 0 {
		first, n = *simSeed, 1
	}
	var total simStats
	deadline := time.Now().Add(*simFor)
	explored := 0
	for seed := first; ; seed++ {
		if *simFor > 0 {
			if time.Now().After(deadline) {
				break
			}
		} else if explored == n {
			break
		}
		s := newSim(t, seed, *simVerbose && *simSeed != 0)
		failure := s.runSchedule()
		if failure == "" && seed%simWallReplayEvery == 0 {
			failure = s.replayWarped()
		}
		explored++
		if failure != "" {
			t.Fatalf("seed %d: %s\nreplay: go test ./queue/shard -run 'TestSimulation$' -shard.sim.seed=%d -shard.sim.verbose -v", seed, failure, seed)
		}
		total.add(s.stats)
	}
	t.Logf("%d schedules from seed %d (%d of mild faults only, %d replayed with other wall clocks), %d events, %d steps, %d claims, %d writes, %d publications, %d relists; faults: %d joins, %d stops, %d kills, %d restarts, %d pauses, %d partitions, %d hung requests, %d slow periods, %d wall clock steps; %d replicas gave up their Lease; fleet: %d engagements, %d engaged, %d hung attempts, %d reconciles, %d drains",
		explored, first, total.mild, total.wallReplays, total.events, total.steps, total.claims, total.writes, total.handoffs, total.relists,
		total.joins, total.leaves, total.kills, total.restarts, total.pauses, total.partitions, total.hung, total.slow, total.clockSteps, total.lost,
		total.engagements, total.engaged, total.fleetHung, total.clusterClaims, total.drains)
}

// replayWarped runs the schedule of s again with every wall clock
// running backwards from another date, and reports a difference in what
// was claimed, when and by whom: the protocol may read the wall clock
// only for the times it writes into the Leases for people.
func (s *sim) replayWarped() string {
	s.stats.wallReplays++
	w := newSim(s.t, s.seed, false)
	w.wallWarp = true
	if failure := w.runSchedule(); failure != "" {
		return "with the wall clocks warped: " + failure
	}
	if w.digest != s.digest || w.stats.claims != s.stats.claims {
		return fmt.Sprintf("with the wall clocks warped, the schedule made other claims (%d, digest %x) than with the usual ones (%d, digest %x): a decision reads the wall clock",
			w.stats.claims, w.digest, s.stats.claims, s.digest)
	}
	return ""
}

func (a *simStats) add(b simStats) {
	a.events += b.events
	a.claims += b.claims
	a.handoffs += b.handoffs
	a.kills += b.kills
	a.restarts += b.restarts
	a.joins += b.joins
	a.leaves += b.leaves
	a.pauses += b.pauses
	a.partitions += b.partitions
	a.steps += b.steps
	a.lost += b.lost
	a.relists += b.relists
	a.writes += b.writes
	a.engagements += b.engagements
	a.engaged += b.engaged
	a.clusterClaims += b.clusterClaims
	a.drains += b.drains
	a.hung += b.hung
	a.slow += b.slow
	a.clockSteps += b.clockSteps
	a.mild += b.mild
	a.wallReplays += b.wallReplays
	a.fleetHung += b.fleetHung
}

// TestSimulationRegressions runs the seeds on which the simulation found
// a violation in an earlier form of the rules: 135 claimed a key that a
// list still on its way gave another member, 34 claimed keys from a view
// that had run out after a pause, 14 published a list before the claims
// it revoked were released, and 158 kept its claims after its renewals
// stopped coming back; 23740 lost its Lease after the faults had stopped
// and was restarted, which the settling bound did not budget; 2070 left
// no replica running, as the supervisor did not restart a process whose
// twin under the same identity was stopping; 183 reconciled keys of a
// fleet's cluster in a process whose claim on the cluster had run out
// during a pause, while another process held the cluster, when a
// reconcile claimed only the cluster's engagement and not its name. A seed replays its schedule
// only as long as the simulation draws its random numbers as it did when
// the seed was found; they stay as schedules that once failed.
func TestSimulationRegressions(t *testing.T) {
	for _, seed := range []uint64{135, 34, 14, 158, 23740, 2070, 183} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			s := newSim(t, seed, false)
			if failure := s.runSchedule(); failure != "" {
				t.Fatalf("seed %d: %s", seed, failure)
			}
			assert.Positive(t, s.stats.claims)
		})
	}
}
