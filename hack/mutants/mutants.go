package main

// Classes of mutants, in the order the report lists them.
const (
	classRunLoop   = "run loop"
	classClock     = "clock"
	classRules     = "core rules"
	classGate      = "gate"
	classFreshness = "cache freshness"
	classFilter    = "cache filter"
	classView      = "view"
	classFleet     = "fleet engagements"
	classRequests  = "lease requests"
	classFleetTime = "fleet timeouts"
)

var classes = []string{classRunLoop, classClock, classRules, classGate, classFreshness, classFilter, classView, classFleet, classRequests, classFleetTime}

// mutant is one planted bug: old must occur exactly once in file (a path
// relative to the module root), and is replaced by new. The tests of pkg
// (a directory relative to the module root; default queue/shard) are to
// catch it.
type mutant struct {
	name, class, file string
	old, new          string
	what              string
	pkg               string
}

// testPkg is the package whose tests are to catch m.
func (m mutant) testPkg() string {
	if m.pkg == "" {
		return pkgDir
	}
	return m.pkg
}

// simulated reports whether m's package tests include the simulation.
func (m mutant) simulated() bool { return m.testPkg() == pkgDir }

// mutants are plausible slips, each a small edit of queue/shard's non-test
// code that breaks a rule of the package documentation, or of the
// engagements of queue/internal/engagement that multicluster.Fleet holds
// its clusters with, which the simulation runs too, or of the timeouts
// of the Lease requests of queue/leader, queue/internal/lease and
// queue/shard, which each package's own tests catch, or of the timeouts of
// multicluster.Fleet (queue/multicluster), which its package's tests
// catch. Keep each old
// snippet short, and unique in its file: a refactor that changes one makes
// the run fail as stale, and the snippet is then updated here.
var mutants = []mutant{
	// Membership.Run's loop (the driver): joining, renewing, releasing,
	// leaving.
	{name: "join-gives-up", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "if !mayPass(err) {",
		new:  "if mayPass(err) {",
		what: "joining gives up after an error that may pass (and retries one that cannot)"},
	{name: "takeover-as-created", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "c.tookOverLease(got, m.now())",
		new:  "c.created(got)",
		what: "a Lease a former process left is taken as this process's own creation: no takeover hold"},
	{name: "renew-too-rarely", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.renewAt = now + d.m.cfg.RetryPeriod",
		new:  "d.renewAt = now + d.m.cfg.RenewDeadline",
		what: "the Lease is renewed every RenewDeadline instead of every RetryPeriod"},
	{name: "renew-timeout-refused", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "case reqRenew:\n\t\tm.withCore(func(c *core) { c.writeDone(r.Seq, got, apierrors.IsConflict(err)) })",
		new:  "case reqRenew:\n\t\tm.withCore(func(c *core) { c.writeDone(r.Seq, got, err != nil) })",
		what: "a renewal that timed out counts as refused, though it may still land"},
	{name: "release-out-of-order", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.releases = append(d.releases, pendingRelease{gen: gen, pending: pending})",
		new:  "d.releases = append([]pendingRelease{{gen: gen, pending: pending}}, d.releases...)",
		what: "a new generation goes first in the release queue: released before the claims revoked earlier"},
	{name: "release-before-last-claim", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "for len(r.pending) > 0 {",
		new:  "for len(r.pending) > 1 {",
		what: "a generation counts as released without waiting for the last claim it revoked"},
	{name: "stop-without-revoking", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "case phaseRunning:\n\t\td.revoke(nil)",
		new:  "case phaseRunning:\n\t\td.phase = phaseRevoking",
		what: "on stop, publishes that it left and deletes its Lease without revoking its claims"},
	{name: "stop-does-not-wait", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "\t\tcase len(d.releases) > 0:\n",
		new:  "",
		what: "after a stop or a lost Lease, leaves or returns without waiting for the revoked claims"},
	{name: "lost-without-revoking", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.revoke(err)",
		new:  "d.finish(err)",
		what: "a lost Lease ends Run without revoking the claims"},
	{name: "leave-not-published", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.m.withCore(func(c *core) { c.leave() })",
		new:  "",
		what: "leaving renews the old list instead of publishing that it left, then deletes the Lease"},
	{name: "leave-keeps-lease", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.deleteOwn(got)",
		new:  "d.left()",
		what: "leaving publishes that it left but does not delete its Lease"},
	{name: "leave-ignores-former-process", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "until, safe = c.hold, !c.takeover || c.hold > 0",
		new:  "until, safe = c.hold, true",
		what: "a process that took its Lease over publishes that it left before it knows the former process stopped"},
	{name: "stale-never-deleted", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "d.out.send(request{Kind: reqDeleteStale, Stale: s, Timeout: d.readTimeout()})",
		new:  "_ = s",
		what: "the Leases of members gone for two LeaseDurations are never deleted"},
	{name: "stale-deleted-if-renewed", class: classRunLoop, file: "queue/shard/driver.go",
		old:  "Preconditions: &metav1.Preconditions{UID: &r.Stale.uid, ResourceVersion: &r.Stale.resourceVersion},",
		new:  "Preconditions: &metav1.Preconditions{UID: &r.Stale.uid},",
		what: "a Lease is deleted even if it was renewed since the version that was to be deleted"},

	// The clock: claims' validity and members' expiry.
	{name: "gone-after-renew-deadline", class: classClock, file: "queue/shard/core.go",
		old:  "expired := c.echo-o.at > c.leaseDuration",
		new:  "expired := c.echo-o.at > c.renewDeadline",
		what: "peers count as gone after RenewDeadline instead of LeaseDuration"},
	{name: "gone-measured-to-now", class: classClock, file: "queue/shard/core.go",
		old:  "expired := c.echo-o.at > c.leaseDuration",
		new:  "expired := now-o.at > c.leaseDuration",
		what: "expiry is measured up to now, not to the send time of the latest echoed write"},
	{name: "valid-for-lease-duration", class: classClock, file: "queue/shard/core.go",
		old:  "return c.echo + c.renewDeadline }",
		new:  "return c.echo + c.leaseDuration }",
		what: "claims stay valid for LeaseDuration after the latest echoed write, not RenewDeadline"},
	{name: "valid-from-echo-arrival", class: classClock, file: "queue/shard/core.go",
		old:  "if s, ok := c.sent[w.seq]; ok && w.seq >= c.echoSeq {\n\t\t\t\tc.echo, c.echoSeq = s.at, w.seq",
		new:  "if _, ok := c.sent[w.seq]; ok && w.seq >= c.echoSeq {\n\t\t\t\tc.echo, c.echoSeq = now, w.seq",
		what: "validUntil counts from when the echo arrived, not from when the write was sent"},
	{name: "takeover-without-hold", class: classClock, file: "queue/shard/core.go",
		old:  "c.hold = now + c.renewDeadline",
		new:  "c.hold = now",
		what: "a process taking over its identity's Lease claims at once, before the former one stopped"},
	// Durations read from the wall clock (the RenewTime in the Leases)
	// instead of the monotonic one: wrong once clocks disagree or step.
	{name: "gone-by-renew-time", class: classClock, file: "queue/shard/membership.go",
		old:  "err := m.core.observe(l, m.now())",
		new:  "err := m.core.observe(l, m.now()-m.wall().Sub(l.Spec.RenewTime.Time))",
		what: "a member's Lease counts as renewed when its RenewTime says, against this replica's wall clock: a clock ahead or a step makes live members look gone, or dead ones live"},
	{name: "valid-by-renew-time", class: classClock, file: "queue/shard/driver.go",
		old:  "res = c.step(now)",
		new:  "if l := c.own; l != nil && l.Spec.RenewTime != nil && c.echoSeq > 0 {\n\t\t\tc.echo = now - d.m.wall().Sub(l.Spec.RenewTime.Time)\n\t\t}\n\t\tres = c.step(now)",
		what: "claims stay valid until RenewDeadline after the RenewTime of the replica's Lease, against its wall clock: a step back keeps them after the renewals stopped, a step forward loses the Lease"},
	{name: "takeover-hold-by-renew-time", class: classClock, file: "queue/shard/driver.go",
		old:  "m.withCore(func(c *core) { c.tookOverLease(got, m.now()) })",
		new:  "m.withCore(func(c *core) {\n\t\t\tc.tookOverLease(got, m.now())\n\t\t\tc.hold = m.now() + c.renewDeadline - m.wall().Sub(got.Spec.RenewTime.Time)\n\t\t})",
		what: "a process taking over its identity's Lease claims RenewDeadline after the former process's RenewTime, against its own wall clock"},

	// The core's rules 1 to 3.
	{name: "claim-ignores-in-flight", class: classRules, file: "queue/shard/core.go",
		old:  "inFlight := c.inFlight()",
		new:  "var inFlight [][]string",
		what: "claims are not checked against the lists of writes that may still land"},
	{name: "publish-before-release", class: classRules, file: "queue/shard/core.go",
		old:  "c.releasedGen == c.targetGen && c.targetGen > 0",
		new:  "c.targetGen > 0",
		what: "a new list is published before the claims it revokes are released"},
	{name: "lost-answer-refused", class: classRules, file: "queue/shard/core.go",
		old:  "case conflict && w != nil:",
		new:  "case w != nil:",
		what: "a write whose answer was lost counts as refused, though it may still land"},
	{name: "deleted-lease-gone", class: classRules, file: "queue/shard/core.go",
		old:  "if expired || o.published.left {",
		new:  "if expired || o.published.left || o.deleted {",
		what: "a Lease deleted before its member published that it left counts as gone at once"},

	// The Gate.
	{name: "claim-after-view-ran-out", class: classGate, file: "queue/shard/gate.go",
		old:  "!v.owns(h) || g.m.now() >= v.validUntil",
		new:  "!v.owns(h)",
		what: "Claim does not check that the view is still valid (a process woken from a pause)"},
	{name: "scan-forgets-applied", class: classGate, file: "queue/shard/gate.go",
		old:  "since := append([]*view{last}, g.applied...)",
		new:  "since := []*view{last}",
		what: "a scan forgets the views applied since the previous one: a key lost and regained is not re-added"},
	{name: "restrict-does-not-wait", class: classGate, file: "queue/shard/gate.go",
		old:  "c.cancel(errMoved)\n\t\t\tpending = append(pending, c.released)",
		new:  "c.cancel(errMoved)",
		what: "a revoked claim is cancelled but not waited for"},
	{name: "history-dropped", class: classGate, file: "queue/shard/gate.go",
		old:  "g.applied = append(g.applied[:0], nil)",
		new:  "g.applied = g.applied[:0]",
		what: "a Gate that drops its history of views does not rescan every owned key"},

	// The sharded caches: when a relist is held, and what is kept.
	{name: "fresh-one-early", class: classFreshness, file: "queue/shard/cache.go",
		old:  "held := c.stored >= c.listSeq && ",
		new:  "held := c.stored+1 >= c.listSeq && ",
		what: "a relist counts as held once the store took all but its last object"},
	{name: "fresh-empty-list", class: classFreshness, file: "queue/shard/cache.go",
		old:  "held := c.stored >= c.listSeq && (!c.listEmpty || c.stored > c.listSeq)",
		new:  "held := c.stored >= c.listSeq",
		what: "an empty relist counts as held while the store may still hold objects it deleted"},
	{name: "list-credited-late", class: classFreshness, file: "queue/shard/cache.go",
		old:  "c.listed = max(c.listed, epoch)",
		new:  "c.listed = max(c.listed, epoch, c.requested)",
		what: "a relist counts for a refresh asked for while it ran"},
	{name: "gain-after-any-cache", class: classFreshness, file: "queue/shard/membership.go",
		old:  "all = min(all, m.done[other])",
		new:  "all = max(all, m.done[other])",
		what: "gained keys are owned once one sharded cache relisted, not every one"},
	{name: "extend-drops-pending", class: classFreshness, file: "queue/shard/membership.go",
		old:  "m.view.Store(m.withPending(v))",
		new:  "m.view.Store(v)",
		what: "a view extended in place forgets the gains still waiting for their relists"},
	{name: "filter-passes-moved", class: classFilter, file: "queue/shard/cache.go",
		old:  "return watch.Event{Type: watch.Deleted, Object: c.atVersion(held.readable(), obj.GetResourceVersion())}, true",
		new:  "_ = held\n\treturn e, true",
		what: "an event moving a held object to an unwanted key passes as is, not as a deletion"},
	{name: "filter-drops-unplaced", class: classFilter, file: "queue/shard/cache.go",
		old:  "if !p.ok {\n\t\treturn true",
		new:  "if !p.ok {\n\t\treturn false",
		what: "objects no key owns are dropped, though every replica must keep them"},
	{name: "filter-owned-not-wanted", class: classFilter, file: "queue/shard/cache.go",
		old:  "return v.wants(h) || c.m.claimed(h)",
		new:  "return v.owns(h) || c.m.claimed(h)",
		what: "caches keep the keys owned now, not those wanted: a relist for a gain drops the gained keys"},
	{name: "drop-claimed-keys", class: classFilter, file: "queue/shard/cache.go",
		old:  "return v.wants(h) || c.m.claimed(h)",
		new:  "return v.wants(h)",
		what: "the objects of a key that moved away are dropped while its reconcile still runs"},
	{name: "deletion-reads-transforming", class: classFilter, file: "queue/shard/cache.go",
		old:  "c.atVersion(held.readable(), ",
		new:  "c.atVersion(held.obj, ",
		what: "the deletion of an object that moved away copies the object passed while its transform may still be changing it"},
	{name: "deletion-shares-store", class: classFilter, file: "queue/shard/cache.go",
		old:  "cp := obj.DeepCopyObject()\n\tif o, err := meta.Accessor(cp)",
		new:  "cp := c.copyOf(obj)\n\tif o, err := meta.Accessor(cp)",
		what: "the deletion of an object that moved away shares its maps with the object the store holds, which the transform then changes"},
	{name: "copy-before-shallow", class: classFilter, file: "queue/shard/cache.go",
		old:  "return nil\n\t}\n\treturn obj.DeepCopyObject()",
		new:  "return nil\n\t}\n\treturn c.copyOf(obj)",
		what: "the copy kept while a transform runs shares its maps with the object passed, which the transform changes in place"},
	{name: "drop-reads-transforming", class: classFilter, file: "queue/shard/cache.go",
		old:  "if c.keepsAt(v, e.place) {",
		new:  "if o, err := meta.Accessor(e.obj); err != nil || c.keeps(v, o) {",
		what: "the drops route the object passed while its transform may still be changing it"},
	{name: "unwanted-never-dropped", class: classFilter, file: "queue/shard/driver.go",
		old:  "d.m.dropUnwanted()",
		new:  "_ = d.m",
		what: "the caches never drop the keys no longer wanted once their claims are released"},

	// The size of a group.
	{name: "group-limit-after-join", class: classRules, file: "queue/shard/core.go",
		old:  "if now < c.joinHold && len(live) > MaxMembers {",
		new:  "if len(live) > MaxMembers {",
		what: "members that joined earlier leave a group grown past its limit too, not only the newcomer"},
	{name: "group-limit-off-by-one", class: classRules, file: "queue/shard/core.go",
		old:  "len(live) > MaxMembers {",
		new:  "len(live) > MaxMembers+1 {",
		what: "a group may grow one member past its limit"},

	// Views: which keys a view owns, and which changes may give keys.
	{name: "owns-ignores-claimants", class: classView, file: "queue/shard/view.go",
		old:  "(l.mustOwn && !m.self) || m.claimant",
		new:  "l.mustOwn && !m.self",
		what: "a key another member's published list gives it counts as owned (rule 3)"},
	{name: "confirmed-not-binding", class: classView, file: "queue/shard/view.go",
		old:  "find(confirmed).mustOwn = true",
		new:  "find(confirmed)",
		what: "a key need not be this replica's under its confirmed list (rule 2)"},
	{name: "maygain-swapped", class: classView, file: "queue/shard/membership.go",
		old:  "mayGain(m.base, v)",
		new:  "mayGain(v, m.base)",
		what: "apply asks whether the old view gains over the new one: gains skip their relist"},
	{name: "maygain-first-view", class: classView, file: "queue/shard/view.go",
		old:  "if from == nil {\n\t\treturn true",
		new:  "if from == nil {\n\t\treturn false",
		what: "the first view after none is judged to gain nothing: no relist"},
	{name: "implied-ignores-claimants", class: classView, file: "queue/shard/view.go",
		old:  "(l.mustOwn || m.claimant)",
		new:  "l.mustOwn",
		what: "mayGain's proof forgets that another member's claim in the old view may go"},
	{name: "maygain-claimant-lists", class: classView, file: "queue/shard/view.go",
		old:  "if !l.mustOwn {\n\t\t\tcontinue\n\t\t}\n\t\thasSelf := false",
		new:  "hasSelf := false",
		what: "mayGain treats the lists of other members' claims in the new view as lists this replica must win"},

	// The engagements of a fleet's member clusters, held under claims of
	// a second Gate.
	{name: "work-without-name-claim", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "if c := e.set.claimer; c != nil {",
		new:  "if c := e.set.claimer; c == nil {",
		what: "a reconcile in a ready cluster takes no claim on the cluster's name: a process that was paused works on after its claim ran out"},
	{name: "drained-at-once", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "if len(e.subs) == 0 {\n\t\tch := make(chan struct{})",
		new:  "if len(e.subs) >= 0 {\n\t\tch := make(chan struct{})",
		what: "a drain reports the cluster drained while its reconciles still run: the cluster stops and ends under them"},
	{name: "work-while-not-ready", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "if e.phase != Ready || e.ctx.Err() != nil {",
		new:  "if e.phase == Ended || e.ctx.Err() != nil {",
		what: "reconciles run in a cluster that is being engaged, or was drained and not engaged again"},
	{name: "work-after-told-to-leave", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "if e.phase != Ready || e.ctx.Err() != nil {",
		new:  "if e.phase != Ready {",
		what: "new reconciles start in a cluster that was told to leave, until it drains"},
	{name: "config-change-ignored", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "!s.same(cfg, e.config)",
		new:  "!s.same(cfg, cfg)",
		what: "a member whose credentials changed keeps its engagement with the old ones"},
	{name: "forget-while-running", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "if s.held[name].phase == Ended {",
		new:  "if s.held[name].Leaving() {",
		what: "an engagement told to end is forgotten before it ended: a second engagement of the cluster starts beside it"},
	{name: "ended-never-forgotten", class: classFleet, file: "queue/internal/engagement/engagement.go",
		old:  "forgotten = s.Forget()\n",
		new:  "",
		what: "converging does not forget the engagements that ended: a cluster that moved back, or whose credentials changed, is never engaged again"},

	// How long a Lease request may take: one that hangs must be
	// abandoned in time for another attempt within the renew deadline.
	{name: "lease-timeout-lease-minus-renew", class: classRequests, file: "queue/internal/lease/lease.go", pkg: "queue/internal/lease",
		old:  "return min(leaseDuration-renewDeadline, (renewDeadline-retryPeriod)/2)",
		new:  "return leaseDuration - renewDeadline",
		what: "a Lease request may take LeaseDuration - RenewDeadline, which with a long Lease leaves no time to retry a hung renewal"},
	{name: "lease-timeout-renew-deadline", class: classRequests, file: "queue/internal/lease/lease.go", pkg: "queue/internal/lease",
		old:  "return min(leaseDuration-renewDeadline, (renewDeadline-retryPeriod)/2)",
		new:  "return renewDeadline",
		what: "a Lease request may take the whole renew deadline"},
	{name: "leader-timeout-renew-deadline", class: classRequests, file: "queue/leader/leader.go", pkg: "queue/leader",
		old:  "return min(margin/2, lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod))",
		new:  "_, _ = margin, lease.RequestTimeout\n\treturn cfg.RenewDeadline",
		what: "leader election's Lease requests may take the whole renew deadline: one hung renewal loses the Lease"},
	{name: "leader-timeout-dropped", class: classRequests, file: "queue/leader/leader.go", pkg: "queue/leader",
		old:  "return context.WithTimeout(ctx, l.timeout)",
		new:  "return context.WithCancel(ctx)",
		what: "leader election's Lease requests have no timeout of their own: a hung renewal loses the Lease, a hung acquire never ends"},
	{name: "leader-elector-untimed", class: classRequests, file: "queue/leader/leader.go", pkg: "queue/leader",
		old:  "Lock:          lock,",
		new:  "Lock:          lock.Interface,",
		what: "the elector gets the Lease lock without the request timeout: acquiring and renewing are untimed, only the release is"},
	{name: "leader-release-untimed", class: classRequests, file: "queue/leader/leader.go", pkg: "queue/leader",
		old:  "func release(ctx context.Context, cfg Config, lock *timedLock) {\n\tlogger := klog.FromContext(ctx)\n",
		new:  "func release(ctx context.Context, cfg Config, lock *timedLock) {\n\tlogger := klog.FromContext(ctx)\n\tlock.timeout = cfg.RenewDeadline\n",
		what: "the release's requests may take the whole renew deadline"},
	{name: "shard-write-timeout-renew-deadline", class: classRequests, file: "queue/shard/driver.go",
		old:  "return lease.RequestTimeout(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)",
		new:  "_ = lease.RequestTimeout\n\treturn c.RenewDeadline",
		what: "a write of the replica's own Lease may take the whole renew deadline: one hung renewal costs it the Lease and every key"},
	{name: "shard-requests-untimed", class: classRequests, file: "queue/shard/driver.go",
		old:  "return context.WithTimeout(parent, r.Timeout)",
		new:  "return context.WithCancel(parent)",
		what: "no Lease request has a timeout: a hung create never joins, a hung renewal costs the Lease"},
	{name: "shard-refresh-timeout-renew-deadline", class: classRequests, file: "queue/shard/driver.go",
		old:  "d.out.send(request{Kind: reqRefresh, Timeout: d.readTimeout()})",
		new:  "d.out.send(request{Kind: reqRefresh, Timeout: m.cfg.RenewDeadline})",
		what: "the read after a renewal's conflict may take the whole renew deadline, while no renewal is sent"},
	{name: "shard-read-timeout-no-floor", class: classRequests, file: "queue/shard/driver.go",
		old:  "return max(d.m.cfg.RetryPeriod, lease.MinRequestTimeout)",
		new:  "return d.m.cfg.RetryPeriod",
		what: "reads and deletes of a Lease take RetryPeriod under the 100ms floor: a short RetryPeriod never takes a Lease over"},
	{name: "shard-takeover-timeout-renew-deadline", class: classRequests, file: "queue/shard/driver.go",
		old:  "d.out.send(request{Kind: reqTakeOver, Timeout: d.readTimeout()})",
		new:  "d.out.send(request{Kind: reqTakeOver, Timeout: m.cfg.RenewDeadline})",
		what: "the read of the Lease a former process left may take the whole renew deadline"},

	// The Fleet's own timeouts (queue/multicluster), which its package's
	// tests catch: the /version probe that declares a member unreachable,
	// the sync timeout of an attempt and of its client constructor. The
	// Fleet has no clock option: its durations are measured on the
	// monotonic clock (time.Now, timers), which no test can step, so it
	// has no mutant of a wall-clock reading.
	{name: "fleet-probe-untimed", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "ctx, cancel := context.WithTimeout(ctx, timeout)",
		new:  "ctx, cancel := context.WithCancel(ctx)",
		what: "the /version probe has no timeout: a member whose API server hangs is never declared unreachable, its keys wait on it forever"},
	{name: "fleet-probe-timeout-cap-only", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "min(f.cfg.probeInterval, probeTimeout)",
		new:  "probeTimeout",
		what: "a probe may take ten seconds whatever the probe interval: a hung member is declared unreachable only after three times that"},
	{name: "fleet-probe-timeout-interval-x3", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "min(f.cfg.probeInterval, probeTimeout)",
		new:  "min(probeFailures*f.cfg.probeInterval, probeTimeout)",
		what: "a probe may take three probe intervals: the probes of a hung member overlap no more, but it is declared unreachable three times later"},
	{name: "fleet-probe-throttled", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "rc.Get().Throttle(nil)",
		new:  "rc.Get()",
		what: "the probe waits on the member's client-side rate limiter: a member whose reconciles keep it busy is declared unreachable"},
	{name: "fleet-sync-untimed", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "syncCtx, cancelSync := context.WithTimeout(actx, f.cfg.syncTimeout)",
		new:  "syncCtx, cancelSync := context.WithCancel(actx)",
		what: "the informers' sync has no timeout: a member whose caches never sync holds its attempt forever, neither ready nor failed"},
	{name: "fleet-client-untimed", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "bctx, cancel := context.WithTimeoutCause(ctx, f.cfg.syncTimeout, fmt.Errorf(\"no client within the sync timeout (%s)\", f.cfg.syncTimeout))",
		new:  "bctx, cancel := context.WithCancel(ctx)",
		what: "the client constructor's context has no timeout: a constructor hung on a member that does not answer holds its attempt forever"},
	{name: "fleet-client-detached", class: classFleetTime, file: "queue/multicluster/fleet.go", pkg: "queue/multicluster",
		old:  "context.WithTimeoutCause(ctx, f.cfg.syncTimeout,",
		new:  "context.WithTimeoutCause(context.WithoutCancel(ctx), f.cfg.syncTimeout,",
		what: "the client constructor's context does not end when the member leaves, changes or the Fleet stops: it runs on until the sync timeout, and Run reports it left behind"},
}
