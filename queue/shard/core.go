package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// published is a member list with its generation, as a replica writes it
// in AnnotationView. A replica that has left publishes left: it holds no
// key and is no longer a member.
type published struct {
	gen     uint64
	members []string
	left    bool
}

// leftMark stands in AnnotationView for the member list of a replica that
// has released everything and is leaving.
const leftMark = "-"

func (p published) String() string {
	if p.left {
		return strconv.FormatUint(p.gen, 10) + " " + leftMark
	}
	return strconv.FormatUint(p.gen, 10) + " " + strings.Join(p.members, ",")
}

func parsePublished(s string) (published, bool) {
	genStr, list, ok := strings.Cut(s, " ")
	gen, err := strconv.ParseUint(genStr, 10, 64)
	if !ok || err != nil {
		return published{}, false
	}
	p := published{gen: gen}
	switch list {
	case "":
	case leftMark:
		p.left = true
	default:
		p.members = strings.Split(list, ",")
	}
	return p, true
}

// writeStamp identifies one write of a member's Lease: the incarnation
// (process) that sent it and its sequence number in that process.
type writeStamp struct {
	incarnation string
	seq         uint64
}

func (s writeStamp) String() string { return s.incarnation + "/" + strconv.FormatUint(s.seq, 10) }

func parseStamp(s string) writeStamp {
	inc, seqStr, ok := strings.Cut(s, "/")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if !ok || err != nil {
		return writeStamp{}
	}
	return writeStamp{incarnation: inc, seq: seq}
}

// seenLease is what a replica knows of one member's Lease.
type seenLease struct {
	uid             types.UID
	resourceVersion string
	published       published
	writer          writeStamp
	// at is when this replica saw the Lease change, on its monotonic
	// clock: the start of the LeaseDuration after which the member counts
	// as gone.
	at time.Duration
	// deleted: the informer delivered the Lease's deletion. A member that
	// had not published that it left still counts as live until its lease
	// runs out, since it may not know yet.
	deleted bool
}

// sentWrite is a write of this replica's own Lease that may still land.
type sentWrite struct {
	at        time.Duration // send time, monotonic
	published published
	failed    bool // answered with a conflict: it did not land and never will
}

// staleLease names a member Lease to delete, in the version seen.
type staleLease struct {
	name, resourceVersion string
	uid                   types.UID
}

// stepResult is what a step asks the driver to do.
type stepResult struct {
	// view is what the replica may claim now. applyView says it owns
	// other keys than the view before, so the driver revokes the claims
	// it does not allow and, once they and those revoked before are
	// released, reports gen back through released. Otherwise the driver
	// only replaces the view, which is valid for longer.
	applyView bool
	view      *view
	gen       uint64
	// publish: the list to publish changed; write the Lease now.
	publish bool
	// deletes are the Leases of members gone for two LeaseDurations.
	deletes []staleLease
	// lost is set when the replica must revoke every claim and stop.
	lost error
	// refused is set when the replica must not join a group this large:
	// it leaves, as a replica that stops does, and Run returns refused.
	refused error
	// wake is the monotonic time at which the next step is due even
	// without news (0: none).
	wake time.Duration
}

// core is the protocol of one replica as a deterministic state machine:
// it is told what the Lease informer delivers, how its own writes end,
// and the time on a monotonic clock, and it decides which keys the
// replica may reconcile, what it publishes and which Leases it deletes.
// It starts no goroutine and reads no clock, so that the simulation in
// the tests can drive many replicas through chosen schedules; Membership
// drives it with a client and an informer. Its methods are not safe for
// concurrent use.
type core struct {
	name, identity, namespace, group, incarnation string
	leaseDuration, renewDeadline                  time.Duration

	observed map[string]*seenLease
	// own is the latest version of this replica's Lease known from the
	// API server (a write's answer, a read, or the informer): writes are
	// based on its resourceVersion.
	own *coordinationv1.Lease

	seq  uint64
	sent map[uint64]*sentWrite
	// echo is the send time of the latest own write the informer has
	// delivered back (or of the first write, until one is); echoSeq its
	// sequence number, 0 before the first.
	echo    time.Duration
	echoSeq uint64
	// takeover: the Lease was there when this replica started (a restart
	// under the same identity), so a former process may still hold keys
	// until RenewDeadline after its last renewal; hold is when this
	// replica may claim keys at the earliest.
	takeover bool
	hold     time.Duration
	// joinHold is when this process may claim keys at the earliest
	// (LeaseDuration after its first step): a member whose Lease was
	// deleted before this process listed the Leases (by hand, say) is
	// invisible to it, and may hold keys until its lease would have run
	// out.
	joinHold time.Duration

	target      []string
	targetGen   uint64
	releasedGen uint64
	desired     published
	leaving     bool
	fingerprint string
	view        *view // the view of the last step
	members     []string
	synced      bool
	// deleting maps a Lease name to the resourceVersion whose deletion
	// was requested; entries go with the Lease.
	deleting map[string]string
	// departed holds members that left the target list and when they
	// were last seen, until a confirmed list without them.
	departed map[string]time.Duration
	// tookOver reports the takeovers measured by the last step.
	tookOver []takeover
}

type takeover struct {
	name  string
	after time.Duration
}

func newCore(cfg Config, incarnation string) *core {
	return &core{
		name: LeaseName(cfg.Group, cfg.Identity), identity: cfg.Identity, namespace: cfg.Namespace, group: cfg.Group,
		incarnation: incarnation, leaseDuration: cfg.LeaseDuration, renewDeadline: cfg.RenewDeadline,
		observed: map[string]*seenLease{}, sent: map[uint64]*sentWrite{},
		deleting: map[string]string{}, departed: map[string]time.Duration{},
	}
}

// initialLease returns the Lease this replica creates when it joins. The
// Lease must come back within RenewDeadline of the latest attempt.
func (c *core) initialLease(now time.Duration, wall time.Time) *coordinationv1.Lease {
	c.echo = now
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.name, Namespace: c.namespace,
			Labels: map[string]string{LabelGroup: c.group},
		},
		Spec: coordinationv1.LeaseSpec{
			LeaseDurationSeconds: ptr.To(int32((c.leaseDuration + time.Second - 1) / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: wall},
		},
	}
	return c.stamp(l, now, wall)
}

// created records the answer to the creation of the Lease.
func (c *core) created(l *coordinationv1.Lease) { c.own = l }

// tookOverLease records that the Lease already existed (l is its current
// version): a former process under the same identity left it.
func (c *core) tookOverLease(l *coordinationv1.Lease, now time.Duration) {
	c.own = l
	c.takeover = true
	// Whatever this process tried to create is that Lease or never
	// lands: every later write is based on the Lease as it is.
	clear(c.sent)
	c.echo = now
}

// nextWrite returns the next renewal of this replica's Lease, publishing
// the desired list, based on the latest version known.
func (c *core) nextWrite(now time.Duration, wall time.Time) *coordinationv1.Lease {
	l := c.own.DeepCopy()
	if c.takeover && c.echoSeq == 0 {
		l.Spec.AcquireTime = &metav1.MicroTime{Time: wall}
	}
	return c.stamp(l, now, wall)
}

// stamp makes l this replica's next write.
func (c *core) stamp(l *coordinationv1.Lease, now time.Duration, wall time.Time) *coordinationv1.Lease {
	c.seq++
	c.sent[c.seq] = &sentWrite{at: now, published: c.publication()}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationView] = c.publication().String()
	l.Annotations[annotationWriter] = writeStamp{c.incarnation, c.seq}.String()
	l.Spec.HolderIdentity = ptr.To(c.identity)
	l.Spec.RenewTime = &metav1.MicroTime{Time: wall}
	return l
}

func (c *core) publication() published {
	if c.leaving {
		return published{gen: c.desired.gen + 1, left: true}
	}
	return c.desired
}

// writeDone records how the write seq ended: l is the stored Lease, or
// conflict says that it did not land. Any other error leaves it
// possible that it landed or will.
func (c *core) writeDone(seq uint64, l *coordinationv1.Lease, conflict bool) {
	w := c.sent[seq]
	switch {
	case l != nil:
		if c.own == nil || newerVersion(l.ResourceVersion, c.own.ResourceVersion) {
			c.own = l
		}
	case conflict && w != nil:
		w.failed = true
	}
}

// refreshed records a read of this replica's Lease after a conflict.
func (c *core) refreshed(l *coordinationv1.Lease) {
	if c.own == nil || !newerVersion(c.own.ResourceVersion, l.ResourceVersion) {
		c.own = l
	}
}

// newerVersion reports whether resourceVersion a is newer than b; both
// come from the same API server, which keeps them ordered as integers.
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b && a != "" // no version is never newer
	}
	return x > y
}

// observe records a Lease of the group delivered by the informer at now.
func (c *core) observe(l *coordinationv1.Lease, now time.Duration) error {
	p, _ := parsePublished(l.Annotations[AnnotationView])
	w := parseStamp(l.Annotations[annotationWriter])
	old := c.observed[l.Name]
	// A relist delivers unchanged Leases again: only a new version counts
	// as a sign of life. Every write carries a new stamp, which also tells
	// versions apart where resourceVersions do not change (fake clients).
	changed := old == nil || old.deleted || old.resourceVersion != l.ResourceVersion || old.writer != w
	if l.Name == c.name {
		if c.own == nil || !newerVersion(c.own.ResourceVersion, l.ResourceVersion) {
			c.own = l
		}
		switch {
		case w.incarnation == c.incarnation:
			if s, ok := c.sent[w.seq]; ok && w.seq >= c.echoSeq {
				c.echo, c.echoSeq = s.at, w.seq
				// Earlier writes can no longer land: each was based on a
				// version this one replaced.
				for seq := range c.sent {
					if seq < w.seq {
						delete(c.sent, seq)
					}
				}
				if c.takeover && c.hold == 0 {
					// The former process's last renewal landed before this
					// one: it stops within RenewDeadline of sending it.
					c.hold = now + c.renewDeadline
				}
			}
		case w.incarnation != "" && c.echoSeq > 0 && changed:
			return fmt.Errorf("%w: Lease %s/%s was renewed by another process (%s): two replicas run with identity %q",
				leader.ErrLeaseLost, c.namespace, c.name, w, c.identity)
		}
	}
	if changed {
		c.observed[l.Name] = &seenLease{uid: l.UID, resourceVersion: l.ResourceVersion, published: p, writer: w, at: now}
	}
	return nil
}

// forget records the deletion of a member's Lease.
func (c *core) forget(name string) error {
	if name == c.name {
		return fmt.Errorf("%w: Lease %s/%s was deleted", leader.ErrLeaseLost, c.namespace, c.name)
	}
	if o := c.observed[name]; o != nil {
		o.deleted = true
	}
	delete(c.deleting, name)
	return nil
}

// deleteFailed records that the deletion of a stale Lease failed for a
// reason that may pass, so that the next step asks again.
func (c *core) deleteFailed(name string) { delete(c.deleting, name) }

// released records that the claims revoked by the view of target
// generation gen have all been released.
func (c *core) released(gen uint64) {
	if gen > c.releasedGen {
		c.releasedGen = gen
	}
}

// leave makes every later write publish that this replica left; the
// caller has revoked and released every claim.
func (c *core) leave() { c.leaving = true }

// validUntil is when the claims of a view computed now stop being valid:
// RenewDeadline after the send time of the latest own write that came
// back through the informer. The others count this replica as gone no
// earlier than LeaseDuration after they saw that write.
func (c *core) validUntil() time.Duration { return c.echo + c.renewDeadline }

// step recomputes, at now, the live members, the list to publish and the
// view of the keys this replica may reconcile.
func (c *core) step(now time.Duration) stepResult {
	var res stepResult
	c.tookOver = c.tookOver[:0]
	if now >= c.validUntil() {
		res.lost = fmt.Errorf("%w: no renewal came back within %s", leader.ErrLeaseLost, c.renewDeadline)
		res.applyView, res.view = c.setView(nil)
		return res
	}
	res.wake = c.validUntil()
	own, ok := c.observed[c.name]
	if !ok || c.echoSeq == 0 || own.writer.incarnation != c.incarnation {
		return res // this process's Lease has not come back yet
	}
	if c.joinHold == 0 {
		c.joinHold = now + c.leaseDuration
	}
	live := []string{c.name}
	claims := map[string][]string{}
	for _, name := range sortedKeys(c.observed) {
		o := c.observed[name]
		if name == c.name {
			continue
		}
		// A member is gone when its Lease has not changed for
		// LeaseDuration, measured up to the send time of this replica's
		// latest write that came back: a watch that fell behind cannot
		// make a live member look gone.
		expired := c.echo-o.at > c.leaseDuration
		if expired || o.published.left {
			if _, ok := c.departed[name]; !ok && slices.Contains(c.target, name) {
				c.departed[name] = o.at
			}
			// A version without a resourceVersion (a fake client's) is
			// asked for once, too.
			asked, ok := c.deleting[name]
			switch {
			case o.deleted:
				delete(c.observed, name)
				delete(c.deleting, name)
			case c.echo-o.at > 2*c.leaseDuration && (!ok || asked != o.resourceVersion):
				c.deleting[name] = o.resourceVersion
				res.deletes = append(res.deletes, staleLease{name: name, resourceVersion: o.resourceVersion, uid: o.uid})
			}
			continue
		}
		live = append(live, name)
		claims[name] = o.published.members
	}
	slices.Sort(live)
	for _, name := range c.target {
		if _, ok := c.departed[name]; !ok && !slices.Contains(live, name) {
			c.departed[name] = now
		}
	}
	c.members = live
	if now < c.joinHold && len(live) > MaxMembers {
		// A replica refuses before it has claimed anything; the members
		// that joined earlier stay.
		res.refused = fmt.Errorf("%w: %d live members with this replica, at most %d", ErrGroupFull, len(live), MaxMembers)
		return res
	}

	var confirmed []string
	if own.published.gen > 0 && !own.published.left {
		confirmed = own.published.members
	}
	inFlight := c.inFlight()
	if !slices.Equal(live, c.target) && !c.leaving {
		c.target = live
		c.targetGen++
		res.gen = c.targetGen
	}
	var v *view
	switch {
	case c.takeover && now < c.hold:
		res.wake = min(res.wake, c.hold)
	case now < c.joinHold:
		res.wake = min(res.wake, c.joinHold)
	case !c.leaving:
		v = newView(c.view, c.name, c.target, confirmed, inFlight, claims, c.validUntil())
	}
	res.applyView, res.view = c.setView(v)
	switch {
	case res.applyView:
		res.gen = c.targetGen
	case res.gen != 0:
		c.released(res.gen) // the view revokes nothing
		res.gen = 0
	}
	if c.releasedGen == c.targetGen && c.targetGen > 0 && c.desired.gen != c.targetGen {
		c.desired = published{gen: c.targetGen, members: slices.Clone(c.target)}
		res.publish = true
	}
	if own.published.gen > 0 && own.published.gen == c.targetGen && v != nil {
		c.synced = true
		for name, seen := range c.departed {
			if !slices.Contains(confirmed, name) {
				c.tookOver = append(c.tookOver, takeover{name: name, after: now - seen})
			}
			delete(c.departed, name)
		}
	}
	return res
}

// inFlight returns the distinct member lists of the own writes that may
// still land and so become what the others read.
func (c *core) inFlight() [][]string {
	var lists [][]string
	for _, seq := range sortedKeys(c.sent) {
		w := c.sent[seq]
		if seq <= c.echoSeq || w.failed {
			continue
		}
		if !slices.ContainsFunc(lists, func(l []string) bool { return slices.Equal(l, w.published.members) }) {
			lists = append(lists, w.published.members)
		}
	}
	return lists
}

// setView reports whether v differs from the view last set, and v. A
// view that differs only in how long it is valid counts as the same: the
// driver stores it in place of the old one without revoking anything.
func (c *core) setView(v *view) (changed bool, _ *view) {
	fp := v.id()
	changed = fp != c.fingerprint
	c.fingerprint, c.view = fp, v
	return changed, v
}

// annotationWriter stamps every write of a member's Lease with the process
// that sent it and a sequence number, so that the member recognises its
// own writes when the informer delivers them.
const annotationWriter = "shard.ctrlkit.io/writer"
