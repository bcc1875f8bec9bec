package shard

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

// The fleet of the simulation: every process also holds the member
// clusters of a fleet, as multicluster.Fleet does, with the same code: a
// second Gate of its membership over the clusters' names, and the
// engagements of queue/internal/engagement under it (Converge when the
// members or their ownership change, Ready once engaged, Claim for each
// reconcile of a cluster's keys, Drain and End when a cluster stops).
// Only what Fleet.Run's goroutines do around them is simulated (simRun):
// the provider, which tells each process of members joining, leaving and
// rotating their credentials after delays of its own; the attempts to
// engage a member (failing while it is unreachable, or hanging until the
// sync timeout while its API server does not answer), the probes that
// notice a member that stopped answering, the backoff between attempts;
// and the reconciles, which honour a cancelled context within simMargin.
//
// The checks: no cluster's keys are reconciled by two processes at once,
// and a reconcile's cluster is one that every list its process's Lease
// may show gives it; a reconcile writes into its cluster only while its
// engagement has not ended; once the faults have stopped, every member is
// engaged and ready in its owner and held by no other process, every
// cluster that left is held by none, and each member's keys have been
// reconciled by its owner. In a schedule of mild faults (see sim.mild),
// no cluster's keys are reconciled outside its owner once the group has
// settled. The engagements read no clock: their timing is that of the
// claims they hold from the Gate, which expire on the membership's
// monotonic clock, so the Lease faults reach them through the Gate. The fleet's world draws from a random source
// of its own, so that it leaves the other draws of a schedule as they
// were.

const (
	simClusterKeys = 3
	// simProbeFailed is how long after a member stops answering an
	// engaged process gives up on it (three probes).
	simProbeFailed = 1500 * time.Millisecond
	// simSyncTimeout is how long an attempt to engage a member waits for
	// its caches before it gives up: an attempt whose requests hang
	// takes that long.
	simSyncTimeout = 2 * time.Second
	simRetryBase   = 200 * time.Millisecond
	simRetryMax    = 2 * time.Second
	// simFleetSettle is what settling the fleet may take beyond simSettle:
	// an attempt after the longest backoff, and a resync.
	simFleetSettle = simRetryMax + time.Second + simResync
)

// simFleetWorld is the fleet's part of the simulated world.
type simFleetWorld struct {
	rng *rand.Rand
	// members are the members the provider reports, with their configs
	// (a credentials' version).
	members map[string]string
	names   int
	// downUntil is when an unreachable member answers again.
	downUntil map[string]time.Duration
	// working holds, per cluster, the processes reconciling one of its
	// keys now, with how many.
	working map[string]map[*simProc]int
	// calm holds, per cluster key, the processes that reconciled it
	// since the faults stopped.
	calm  map[string][]*simProc
	stats struct{ engagements, ready, claims, drains int }
}

func newSimFleetWorld(seed uint64) *simFleetWorld {
	w := &simFleetWorld{rng: rand.New(rand.NewPCG(seed^0x5bd1e995, seed)), members: map[string]string{}, downUntil: map[string]time.Duration{},
		working: map[string]map[*simProc]int{}, calm: map[string][]*simProc{}}
	for range 4 + w.rng.IntN(5) {
		w.members[w.newName()] = "v1"
	}
	return w
}

func (w *simFleetWorld) newName() string {
	w.names++
	return "cluster-" + strconv.Itoa(w.names)
}

func (w *simFleetWorld) dur(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

func (w *simFleetWorld) chance(p float64) bool { return w.rng.Float64() < p }

// simFleet is one process's fleet.
type simFleet struct {
	p    *simProc
	set  *engagement.Set[string]
	gate *Gate[string]
	last *view
	runs map[*engagement.Engagement[string]]*simRun
	// The controller of the clusters' keys ("cluster/key").
	queue       []string
	queued      map[string]bool
	active      map[string]*simClusterReconcile
	workers     int
	convergeDue bool
	// news is what the provider told the process and it has not heard
	// yet: its informer delivers the first list and every change after
	// it in order.
	news []simNews
}

type simNews struct {
	at   time.Duration
	name string
	fn   func()
}

// simRun is what runMember does for one engagement: attempts, probes,
// backoff, and the stop.
type simRun struct {
	f     *simFleet
	e     *engagement.Engagement[string]
	state simRunState
	// epoch tells the run's scheduled steps from those of an earlier
	// state.
	epoch   int
	delay   time.Duration
	drained <-chan struct{}
	final   bool
	// noticed: its context ended, and it is about to stop.
	noticed bool
	// readySeq counts the times it was ready, for the probes of each.
	readySeq int
}

type simRunState int

const (
	runAttempting simRunState = iota
	runReady
	runDraining
	runBackoff
	runEnded
)

type simClusterReconcile struct {
	key       string
	cluster   string
	e         *engagement.Engagement[string]
	ctx       context.Context
	release   func()
	returning bool
}

func newSimFleet(p *simProc) *simFleet {
	f := &simFleet{p: p, runs: map[*engagement.Engagement[string]]*simRun{}, queued: map[string]bool{},
		active: map[string]*simClusterReconcile{}, workers: 2}
	f.gate = NewGate(p.m, Keys[string]{String: func(c string) string { return c }, List: func() []string { return f.set.Wanted() }})
	f.set = engagement.New[string](f.gate, func(a, b string) bool { return a == b }, errSimLeft)
	// The provider's first list.
	w := p.s.fleet
	snapshot := map[string]string{}
	for name, cfg := range w.members {
		snapshot[name] = cfg
	}
	f.tell(w.dur(0, p.s.maxWatchDelay), "members listed", func() {
		for _, name := range sortedKeys(snapshot) {
			f.set.Want(name, snapshot[name])
		}
		f.converge()
	})
	return f
}

var errSimLeft = simError("the cluster left")

type simError string

func (e simError) Error() string { return string(e) }

// tell delivers the provider's news fn to the process after delay, but
// not before the news before it, nor while its watches stall.
func (f *simFleet) tell(delay time.Duration, name string, fn func()) {
	at := f.p.s.now + delay
	if n := len(f.news); n > 0 {
		at = max(at, f.news[n-1].at)
	}
	f.news = append(f.news, simNews{at: at, name: name, fn: fn})
	if len(f.news) == 1 {
		f.hear()
	}
}

// hear delivers the first news once it is due and the watches do not
// stall, then schedules the next.
func (f *simFleet) hear() {
	n := f.news[0]
	f.p.s.at(max(n.at, f.p.watcher.stalledUntil), f.p, n.name, func() {
		if f.p.watcher.stalledUntil > f.p.s.now {
			f.hear()
			return
		}
		f.news = f.news[1:]
		n.fn()
		if len(f.news) > 0 {
			f.hear()
		}
	})
}

// after schedules fn in the fleet's process.
func (f *simFleet) after(d time.Duration, name string, fn func()) {
	f.p.s.after(d, f.p, name, fn)
}

// told delivers a change of the provider's members to the process.
func (f *simFleet) told(name, cfg string) {
	if cfg == "" {
		f.set.Unwant(name)
	} else {
		f.set.Want(name, cfg)
	}
	f.kick()
}

// kick makes the fleet converge soon, as a signal of its kick channel
// does.
func (f *simFleet) kick() {
	if f.convergeDue {
		return
	}
	f.convergeDue = true
	f.after(f.p.s.fleet.dur(0, 2*time.Millisecond), "fleet converges", func() {
		f.convergeDue = false
		f.converge()
	})
}

func (f *simFleet) converge() {
	if !f.p.alive() {
		return
	}
	started, forgotten := f.set.Converge(context.Background())
	for _, name := range forgotten {
		f.p.s.logf("%s forgets %s", f.p.identity, name)
	}
	for _, e := range started {
		for _, other := range f.sortedRuns() {
			if other.Name() == e.Name() && other != e {
				f.p.s.fail("%s engages %s while its earlier engagement of it still runs", f.p.identity, e.Name())
			}
		}
		f.p.s.stats.engagements++
		f.p.s.logf("%s engages %s (%s)", f.p.identity, e.Name(), e.Config())
		r := &simRun{f: f, e: e, delay: simRetryBase}
		f.runs[e] = r
		r.attempt()
	}
	f.poll()
}

// drainGate runs the Gate's scan when it was woken, as Gate.Start does;
// a name it adds makes the fleet converge.
func (f *simFleet) drainGate() {
	select {
	case <-f.gate.wake:
		f.last = f.gate.scan(simKicker{f}, "fleet", f.last)
	default:
	}
}

type simKicker struct{ f *simFleet }

func (k simKicker) Add(string)                     { k.f.kick() }
func (k simKicker) AddLowPriority(string)          { k.f.kick() }
func (k simKicker) AddAfter(string, time.Duration) { k.f.kick() }

// poll lets the runs and the reconciles notice that their contexts ended:
// each does within simMargin.
func (f *simFleet) poll() {
	w := f.p.s.fleet
	for _, e := range f.sortedRuns() {
		r := f.runs[e]
		if r.e.Context().Err() != nil && !r.noticed && (r.state == runAttempting || r.state == runReady || r.state == runBackoff) {
			r.noticed = true
			f.after(w.dur(0, simMargin/2), r.e.Name()+": notices it must stop", r.stop)
		}
	}
	for _, k := range sortedKeys(f.active) {
		rec := f.active[k]
		if rec.returning || rec.ctx.Err() == nil {
			continue
		}
		rec.returning = true
		f.after(w.dur(0, simMargin), "reconcile of "+k+" returns cancelled", func() { f.finish(rec) })
	}
}

func (f *simFleet) sortedRuns() []*engagement.Engagement[string] {
	es := make([]*engagement.Engagement[string], 0, len(f.runs))
	for e := range f.runs {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *engagement.Engagement[string]) int {
		if a.Name() != b.Name() {
			if a.Name() < b.Name() {
				return -1
			}
			return 1
		}
		return 0
	})
	return es
}

// next moves r to a new step after d; the steps scheduled before are
// dropped.
func (r *simRun) next(d time.Duration, name string, fn func()) {
	r.epoch++
	epoch := r.epoch
	r.f.after(d, r.e.Name()+": "+name, func() {
		if r.epoch == epoch && r.state != runEnded {
			fn()
		}
	})
}

// attempt builds the client, engages and waits for the caches, which
// fails while the member is unreachable, when the member's API server
// leaves its requests hanging until the sync timeout (during the faults),
// or, now and then, for no reason the fleet can tell.
func (r *simRun) attempt() {
	s, w := r.f.p.s, r.f.p.s.fleet
	r.state = runAttempting
	took := w.dur(10*time.Millisecond, time.Second)
	hung := s.faulting && w.chance(0.03)
	if hung {
		s.stats.fleetHung++
		took = simSyncTimeout
	}
	r.next(took, "attempt ends", func() {
		if r.e.Context().Err() != nil {
			r.stop()
			return
		}
		if hung || w.downUntil[r.e.Name()] > r.f.p.s.now || w.chance(0.05) {
			r.backoff()
			return
		}
		if !r.e.Ready() {
			r.stop()
			return
		}
		r.f.p.s.stats.engaged++
		r.state = runReady
		r.readySeq++
		for i := range simClusterKeys {
			r.f.add(r.e.Name() + "/" + strconv.Itoa(i))
		}
		r.probe()
	})
}

// probe gives up on a member that stopped answering.
func (r *simRun) probe() {
	w := r.f.p.s.fleet
	until := w.downUntil[r.e.Name()]
	if until <= r.f.p.s.now {
		return
	}
	seq := r.readySeq
	r.f.after(simProbeFailed+w.dur(0, 500*time.Millisecond), r.e.Name()+": probes fail", func() {
		if r.state == runReady && r.readySeq == seq && w.downUntil[r.e.Name()] > r.f.p.s.now {
			r.drain()
		}
	})
}

// stop is what runMember does once the engagement's context ended.
func (r *simRun) stop() {
	if r.state == runDraining || r.state == runEnded {
		return
	}
	r.drain()
}

// drain makes the member not ready, waits for its reconciles, stops its
// informers and then ends it or tries again after a backoff.
func (r *simRun) drain() {
	r.f.p.s.stats.drains++
	r.state = runDraining
	r.drained, r.final = r.e.Drain()
	r.f.poll()
	r.waitDrained()
}

func (r *simRun) waitDrained() {
	select {
	case <-r.drained:
	default:
		return // a reconcile's release calls waitDrained again
	}
	r.next(r.f.p.s.fleet.dur(0, 5*time.Millisecond), "informers stopped", func() {
		if r.final {
			r.end()
			return
		}
		r.backoff()
	})
}

func (r *simRun) backoff() {
	if r.e.Context().Err() != nil {
		r.end()
		return
	}
	r.state = runBackoff
	d := r.delay
	r.delay = min(2*r.delay, simRetryMax)
	r.next(d, "backoff ends", func() {
		if r.e.Context().Err() != nil {
			r.end()
			return
		}
		r.attempt()
	})
}

func (r *simRun) end() {
	r.state = runEnded
	r.e.End()
	delete(r.f.runs, r.e)
	r.f.p.s.logf("%s ends its engagement of %s", r.f.p.identity, r.e.Name())
	r.f.p.kick() // the membership may wait for the release of its claim
	r.f.kick()
}

// add queues a cluster's key, as Cluster.Queue passes it once the cluster
// is ready.
func (f *simFleet) add(key string) {
	if !f.p.alive() || f.queued[key] {
		return
	}
	f.queued[key] = true
	f.queue = append(f.queue, key)
	f.work()
}

func (f *simFleet) work() {
	for i := 0; i < len(f.queue) && len(f.active) < f.workers; {
		key := f.queue[i]
		if _, busy := f.active[key]; busy {
			i++
			continue
		}
		f.queue = slices.Delete(f.queue, i, i+1)
		delete(f.queued, key)
		f.reconcile(key)
	}
}

func clusterOfKey(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return key
}

// reconcile is the controller's reconcile of a cluster's key under the
// Fleet's Claim.
func (f *simFleet) reconcile(key string) {
	s, w := f.p.s, f.p.s.fleet
	cluster := clusterOfKey(key)
	e := f.set.Get(cluster)
	if e == nil {
		return
	}
	ctx, release, ok := e.Claim(context.Background())
	if !ok {
		return
	}
	s.stats.clusterClaims++
	if r := f.runs[e]; r == nil || r.state != runReady {
		s.fail("%s reconciles %s in %s, which it has not engaged (or has stopped)", f.p.identity, key, cluster)
	}
	if e.Context().Err() != nil {
		s.fail("%s starts a reconcile of %s in %s after it was told to leave it", f.p.identity, key, cluster)
	}
	for _, other := range sortedProcs(w.working[cluster]) {
		if other != f.p {
			s.fail("%s reconciles %s while %s reconciles in %s", f.p.identity, key, other.identity, cluster)
		}
	}
	for _, pub := range s.mayShow(f.p) {
		if pub.left || Assign(pub.members, cluster) != f.p.name {
			s.fail("%s reconciles in %s, which its Lease's list %v (on the server or on its way) does not give it", f.p.identity, cluster, pub)
		}
	}
	if s.settled != nil && Assign(s.settled, cluster) != f.p.name {
		s.fail("%s reconciles in %s under mild faults only, after the group %v settled with its owner %s", f.p.identity, cluster, s.settled, Assign(s.settled, cluster))
	}
	s.note(f.p, key)
	if w.working[cluster] == nil {
		w.working[cluster] = map[*simProc]int{}
	}
	w.working[cluster][f.p]++
	if !s.faulting {
		w.calm[key] = append(w.calm[key], f.p)
	}
	rec := &simClusterReconcile{key: key, cluster: cluster, e: e, ctx: ctx, release: release}
	f.active[key] = rec
	hold := w.dur(0, 20*time.Millisecond)
	if w.chance(0.05) {
		hold = w.dur(0, 3*time.Second)
	}
	// It writes into its cluster once before it returns, even when
	// cancelled.
	f.after(w.dur(0, hold), "", func() {
		if f.active[key] == rec && rec.e.Phase() == engagement.Ended {
			s.fail("%s writes into %s after its engagement ended", f.p.identity, cluster)
		}
	})
	f.after(hold, "", func() {
		if !rec.returning {
			f.finish(rec)
		}
	})
}

func (f *simFleet) finish(rec *simClusterReconcile) {
	if f.active[rec.key] != rec {
		return
	}
	delete(f.active, rec.key)
	f.p.s.fleet.unwork(rec.cluster, f.p)
	rec.release()
	f.p.kick() // the membership may wait for the release
	if r := f.runs[rec.e]; r != nil && r.state == runDraining {
		r.waitDrained()
	}
	f.work()
}

func (w *simFleetWorld) unwork(cluster string, p *simProc) {
	if n := w.working[cluster][p]; n > 1 {
		w.working[cluster][p] = n - 1
	} else {
		delete(w.working[cluster], p)
	}
}

// killed forgets the work of a process killed with kill -9.
func (f *simFleet) killed() {
	for _, rec := range f.active {
		delete(f.p.s.fleet.working[rec.cluster], f.p)
	}
}

// resync queues the keys of every ready cluster, as the informers'
// handlers and the controller's resync do.
func (f *simFleet) resync() {
	for _, e := range f.sortedRuns() {
		if r := f.runs[e]; r.state == runReady {
			for i := range simClusterKeys {
				f.add(e.Name() + "/" + strconv.Itoa(i))
			}
		}
	}
}

func sortedProcs(m map[*simProc]int) []*simProc {
	procs := make([]*simProc, 0, len(m))
	for p := range m {
		procs = append(procs, p)
	}
	slices.SortFunc(procs, func(a, b *simProc) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return procs
}

// fleetFault changes the members or their reachability.
func (s *sim) fleetFault() {
	w := s.fleet
	names := sortedKeys(w.members)
	switch n := w.rng.IntN(4); {
	case n == 0 && len(names) < 10:
		name := w.newName()
		s.logf("%s joins the fleet", name)
		s.tellMembers(name, "v1")
	case n == 1 && len(names) > 1:
		name := names[w.rng.IntN(len(names))]
		s.logf("%s leaves the fleet", name)
		s.tellMembers(name, "")
	case n == 2 && len(names) > 0:
		name := names[w.rng.IntN(len(names))]
		cfg := w.members[name] + "+"
		s.logf("%s's credentials are rotated", name)
		s.tellMembers(name, cfg)
	case len(names) > 0:
		name := names[w.rng.IntN(len(names))]
		w.downUntil[name] = min(s.now+w.dur(0, 3*time.Second), s.calmAt)
		s.logf("%s does not answer until %s", name, w.downUntil[name])
		for _, p := range s.procs {
			if r := p.fleetRun(name); r != nil && r.state == runReady {
				r.probe()
			}
		}
	}
}

// tellMembers changes a member in the provider (cfg "": it leaves), which
// each process hears of after a delay of its own.
func (s *sim) tellMembers(name, cfg string) {
	w := s.fleet
	if cfg == "" {
		delete(w.members, name)
	} else {
		w.members[name] = cfg
	}
	for _, p := range s.procs {
		if !p.alive() {
			continue
		}
		p.fleet.tell(w.dur(0, s.maxWatchDelay), "told of "+name, func() { p.fleet.told(name, cfg) })
	}
}

func (p *simProc) fleetRun(cluster string) *simRun {
	if p.fleet == nil || p.dead {
		return nil
	}
	if e := p.fleet.set.Get(cluster); e != nil {
		return p.fleet.runs[e]
	}
	return nil
}

func (s *sim) scheduleFleetFaults() {
	s.after(s.fleet.dur(0, 2*time.Second), nil, "", func() {
		if s.now >= s.calmAt {
			return
		}
		s.fleetFault()
		s.scheduleFleetFaults()
	})
}

// checkFleetSettled checks the fleet simFleetSettle after the last fault:
// every member is engaged and ready in its owner alone, and its keys were
// reconciled by it; a cluster that left is held by no process.
func (s *sim) checkFleetSettled(names []string) string {
	w := s.fleet
	for _, p := range s.live() {
		for _, e := range p.fleet.sortedRuns() {
			if _, member := w.members[e.Name()]; !member {
				return p.identity + " still holds " + e.Name() + ", which left the fleet"
			}
		}
	}
	for _, cluster := range sortedKeys(w.members) {
		owner := Assign(names, cluster)
		for _, p := range s.live() {
			r := p.fleetRun(cluster)
			switch {
			case p.name == owner && (r == nil || r.state != runReady):
				return cluster + " is not ready in its owner " + owner + " after the faults"
			case p.name == owner && r.e.Config() != w.members[cluster]:
				return owner + " holds " + cluster + " with the credentials " + r.e.Config() + ", not " + w.members[cluster]
			case p.name != owner && r != nil:
				return p.identity + " holds " + cluster + ", which is " + owner + "'s"
			}
		}
		for i := range simClusterKeys {
			key := cluster + "/" + strconv.Itoa(i)
			if !slices.ContainsFunc(w.calm[key], func(p *simProc) bool { return p.name == owner && p.alive() }) {
				return key + " not reconciled by its owner " + owner + " after the faults"
			}
		}
	}
	return ""
}
