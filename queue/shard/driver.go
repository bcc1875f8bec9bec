package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// driver is Membership.Run's loop as a deterministic event handler: it
// joins the group, renews the Lease, steps the core, applies its views,
// reports released claims to the core in order, deletes the Leases of
// departed members, and leaves. It starts no goroutine, reads only the
// membership's monotonic clock and sends requests only through its
// effects, so Run and the simulation in the tests drive the same code:
// each hands it the same events (a turn of the loop, the answer to a
// request) from one goroutine at a time, and carries out its requests.
type driver struct {
	m      *Membership
	out    effects
	logger logr.Logger

	phase driverPhase
	// synced: the Lease informer has delivered its initial list.
	synced bool
	// joinAt is when the next attempt to create the Lease is due, while
	// none is in flight.
	joinAt  time.Duration
	joining bool

	// writing: a renewal (or the read after its conflict) is in flight.
	writing bool
	// writeNow: a write is asked for as soon as the one in flight ends
	// (a new list to publish, a Lease taken over, or a renewal that fell
	// due meanwhile).
	writeNow bool
	renewAt  time.Duration
	stepAt   time.Duration

	// releases are the claims each applied view revoked, in order: a
	// generation counts as released only once every claim revoked up to
	// it is.
	releases []pendingRelease
	// leaveAt is when a stopping process that took its Lease over may
	// publish that it left.
	leaveAt time.Duration
	// leaveTries counts the writes publishing that this replica left.
	leaveTries int
	// deleteTries counts the deletes of this replica's Lease at a stop.
	deleteTries int
	// stopBy is when the requests of a stop (the leave, the read and
	// delete of the Lease) are given up, on the membership's monotonic
	// clock: RenewDeadline after the claims were released and no renewal
	// was in flight (the leave's start, or the start of the wait for a
	// takeover's hold), or after a stop while joining. Zero until then.
	stopBy time.Duration
	// stopJoin: stopped while joining; a create of this process may
	// have landed, so its Lease is read, and deleted if it is this
	// process's, before Run returns.
	stopJoin bool
	// createMayLand: a create of this process was abandoned or failed
	// in a way that leaves it possible that the API server applies it
	// later.
	createMayLand bool
	// result is what Run returns once the phase is driverDone.
	result error
	// refused is what Run returns after a normal stop: the replica left
	// a group it would have made too large.
	refused error
}

type driverPhase int

const (
	phaseJoining driverPhase = iota
	phaseRunning
	// phaseRevoking: every claim is revoked; once they are released, a
	// lost replica is done and a stopping one leaves.
	phaseRevoking
	// phaseLeaving: publishing that this replica left, then deleting its
	// Lease.
	phaseLeaving
	phaseDone
)

type pendingRelease struct {
	gen     uint64
	pending []<-chan struct{}
}

// requestKind names what a request does with the Leases.
type requestKind int

const (
	reqCreate       requestKind = iota // create this replica's Lease
	reqTakeOver                        // read the Lease a former process left, or the own one at a stop while joining
	reqRenew                           // update this replica's Lease
	reqRefresh                         // read it after a renewal's conflict
	reqLeave                           // update it to publish that this replica left
	reqRefreshLeave                    // read it after that update's conflict
	reqDeleteOwn                       // delete it after leaving
	reqDeleteStale                     // delete the Lease of a departed member
	reqCreateLeft                      // create it marked as left, at a stop while joining
)

func (k requestKind) String() string {
	return [...]string{"create", "get existing", "update", "get after conflict", "leave", "get after leave conflict", "delete own", "delete stale", "create left"}[k]
}

// maxLeaveTries bounds the writes publishing that this replica left: one
// that conflicted is sent again on the version read after it, and one
// that failed otherwise (it hung, or the server failed) on the version
// this process knows, each within the write timeout.
const maxLeaveTries = 3

// maxDeleteTries bounds the deletes of this replica's Lease at a stop:
// one that hung or failed may not have landed, and is sent again in the
// same version (one that did land makes the next one answer not found).
const maxDeleteTries = 3

// errStoppedJoining is what Run returns after a stop before it joined.
var errStoppedJoining = errors.New("shard: stopped before joining the group")

// request is one request to the API server. create and update send Lease;
// the reads name this replica's Lease; the deletes delete Stale in the
// version named. The answer must come within Timeout.
type request struct {
	Kind    requestKind
	Lease   *coordinationv1.Lease
	Seq     uint64 // the write's sequence number, for create and update
	Stale   staleLease
	Timeout time.Duration
	// Sent is when the driver sent it, on the membership's monotonic
	// clock (set for the writes of the replica's own Lease).
	Sent time.Duration
}

// effects carries out a driver's requests: the answer to each is handed
// back through driver.answered, never from within send.
type effects interface {
	send(r request)
	// startInformer starts the Lease informer, once the Lease exists.
	startInformer()
}

func newDriver(m *Membership, out effects, logger logr.Logger) *driver {
	return &driver{m: m, out: out, logger: logger}
}

// done reports whether Run returns, and with what.
func (d *driver) done() (bool, error) { return d.phase == phaseDone, d.result }

// stopping reports whether the replica is giving up its keys, after a
// normal stop or a lost Lease.
func (d *driver) stopping() bool { return d.phase >= phaseRevoking }

// start begins joining the group.
func (d *driver) start() { d.sendCreate() }

// stop begins a normal stop: revoke every claim, wait for them, publish
// that this replica left and delete its Lease.
func (d *driver) stop() {
	switch d.phase {
	case phaseJoining:
		// A create sent before (abandoned on its timeout, or failed
		// with the answer lost) or still in flight may have landed:
		// the others would count this replica a live member for
		// LeaseDuration. Once no request is in flight, read the Lease
		// and delete it if this process wrote it.
		if !d.stopJoin {
			d.stopJoin = true
			d.startStopBudget()
			if !d.joining {
				d.checkJoin()
			}
		}
	case phaseRunning:
		d.revoke(nil)
	}
}

// checkJoin reads this replica's Lease after a stop while joining; the
// answer goes to stoppedJoining.
func (d *driver) checkJoin() {
	t, ok := d.stopTimeout(d.readTimeout())
	if !ok {
		d.logger.Info("Could not read the Lease within RenewDeadline of a stop while joining; if a create landed, it expires")
		d.finish(errStoppedJoining)
		return
	}
	d.joining = true
	d.out.send(request{Kind: reqTakeOver, Timeout: t})
}

// stoppedJoining handles what a stop while joining found: l, the Lease
// of this replica's name if err is nil.
func (d *driver) stoppedJoining(l *coordinationv1.Lease, err error) {
	var ours bool
	if err == nil {
		d.m.withCore(func(c *core) { ours = parseStamp(l.Annotations[annotationWriter]).incarnation == c.incarnation })
	}
	switch {
	case ours && isLeft(l):
		// The Lease this stop created, marked as left: it stays, so
		// that a create abandoned before fails, and costs the others
		// nothing (they delete it as a departed member's).
		d.finish(errStoppedJoining)
	case ours:
		// Deleted in the version this process wrote, and no other.
		d.joining = true
		d.deleteOwn(l)
	case err != nil && !apierrors.IsNotFound(err):
		d.logger.Info("Could not read the Lease at a stop while joining; if a create landed, it expires", "err", err.Error())
		d.finish(errStoppedJoining)
	case err != nil && d.createMayLand:
		// A create abandoned (or failed) before may still be applied
		// by the API server, after this read: it would make the others
		// count this replica a live member for LeaseDuration. Create
		// the Lease marked as left first, so that such a create fails.
		d.createLeft()
	default:
		d.finish(errStoppedJoining)
	}
}

// isLeft reports whether l publishes that its replica left.
func isLeft(l *coordinationv1.Lease) bool {
	p, ok := parsePublished(l.Annotations[AnnotationView])
	return ok && p.left
}

// createLeft creates this replica's Lease marked as left, at a stop while
// joining, within the stop's deadline.
func (d *driver) createLeft() {
	t, ok := d.stopTimeout(d.writeTimeout())
	if !ok {
		d.logger.Info("Could not mark the Lease as left within RenewDeadline of a stop while joining; if a create lands, it expires")
		d.finish(errStoppedJoining)
		return
	}
	var l *coordinationv1.Lease
	var seq uint64
	d.m.withCore(func(c *core) {
		c.leave()
		l = c.initialLease(d.m.now(), d.m.wall())
		seq = c.seq
	})
	d.joining = true
	d.out.send(request{Kind: reqCreateLeft, Lease: l, Seq: seq, Timeout: t, Sent: d.m.now()})
}

// lose revokes every claim and makes Run return err once they are
// released.
func (d *driver) lose(err error) {
	if d.phase == phaseJoining || d.phase == phaseRunning {
		d.logger.Error(err, "Every claim is revoked")
		d.revoke(err)
	}
}

func (d *driver) revoke(err error) {
	d.phase, d.result = phaseRevoking, err
	d.queueRelease(0, d.m.apply(nil))
}

func (d *driver) finish(err error) {
	if err == nil {
		err = d.refused
	}
	d.phase, d.result = phaseDone, err
}

// left ends a normal stop.
func (d *driver) left() {
	d.logger.Info("Left the group")
	d.finish(nil)
}

// turn runs what is due at the membership's time now: released claims,
// a step of the core, a renewal, another attempt to join.
func (d *driver) turn() {
	now := d.m.now()
	d.pollReleases()
	switch d.phase {
	case phaseJoining:
		if !d.joining && !d.stopJoin && now >= d.joinAt {
			d.sendCreate()
		}
	case phaseRunning:
		if now >= d.renewAt {
			d.renewAt = now + d.m.cfg.RetryPeriod
			d.writeNow = true
		}
		d.renew()
		d.step(now)
	}
	if d.phase == phaseRevoking {
		// Also right after a step that lost the Lease: with no claim to
		// wait for, nothing else would come to end the revocation.
		d.pollReleases()
		switch {
		case len(d.releases) > 0:
		case d.result != nil:
			d.finish(d.result)
		case !d.writing:
			// Every claim is released and no renewal is in flight: publish
			// that this replica left, unless a former process of its
			// identity may still hold keys. The stop's deadline starts
			// here, also while a takeover's hold delays the leave, so the
			// stop ends within the renewal in flight plus RenewDeadline.
			d.startStopBudget()
			until, safe := d.leaveHold()
			switch {
			case !safe:
				d.logger.Info("Stopping without publishing that this replica left: a former process of its identity may still hold keys; the Lease expires")
				d.finish(nil)
			case now < until && until >= d.stopBy:
				d.logger.Info("Stopping without publishing that this replica left: a former process of its identity may hold keys past RenewDeadline of the stop; the Lease expires")
				d.finish(nil)
			case now < until:
				d.leaveAt = until
			default:
				d.phase = phaseLeaving
				d.m.withCore(func(c *core) { c.leave() })
				d.sendLeave()
			}
		}
	}
}

// wake returns when the next turn is due without news, on the
// membership's clock (0: none).
func (d *driver) wake() time.Duration {
	switch d.phase {
	case phaseJoining:
		if !d.joining && !d.stopJoin {
			return d.joinAt
		}
	case phaseRunning:
		return min(d.stepAt, d.renewAt)
	case phaseRevoking:
		return d.leaveAt
	}
	return 0
}

// leaveHold returns when this process may publish that its replica left:
// once a former process of its identity, whose Lease it took over, has
// stopped (see core.hold). safe is false while that time is not known.
func (d *driver) leaveHold() (until time.Duration, safe bool) {
	d.m.withCore(func(c *core) {
		until, safe = c.hold, !c.takeover || c.hold > 0
	})
	return until, safe
}

// step is one step of the core and what follows from it.
func (d *driver) step(now time.Duration) {
	d.stepAt = now + d.m.cfg.RetryPeriod/4
	if !d.synced {
		return
	}
	var res stepResult
	var took []takeover
	var members int
	var publishing uint64
	d.m.withCore(func(c *core) {
		res = c.step(now)
		took = slices.Clone(c.tookOver)
		members = len(c.members)
		publishing = c.desired.gen
	})
	if res.lost != nil {
		d.lose(res.lost)
		return
	}
	if res.refused != nil {
		d.logger.Error(res.refused, "Leaving the group without claiming anything")
		d.refused = res.refused
		d.revoke(nil)
		return
	}
	m := d.m
	m.cfg.Metrics.SetMembers(m.cfg.Group, members)
	for _, t := range took {
		m.cfg.Metrics.ObserveTakeover(m.cfg.Group, t.after)
		d.logger.Info("Took over the keys of a member that left", "left", t.name, "after", t.after.Round(time.Millisecond))
	}
	if res.applyView {
		d.logger.V(2).Info("Ownership changed", "members", m.Members(), "generation", res.gen)
		d.queueRelease(res.gen, m.apply(res.view))
	} else {
		m.extend(res.view) // the same keys, valid for longer
	}
	if res.publish {
		if publishing > 1 { // the first list is no handoff
			m.cfg.Metrics.IncHandoffs(m.cfg.Group)
		}
		d.writeNow = true
		d.renew()
	}
	for _, s := range res.deletes {
		d.out.send(request{Kind: reqDeleteStale, Stale: s, Timeout: d.readTimeout()})
	}
	if res.wake > now {
		d.stepAt = min(d.stepAt, res.wake)
	}
}

// queueRelease queues what the claims revoked by the view of generation
// gen (0: revoking everything) close when they are released, behind the
// claims revoked before, and reports what is released.
func (d *driver) queueRelease(gen uint64, pending []<-chan struct{}) {
	d.releases = append(d.releases, pendingRelease{gen: gen, pending: pending})
	d.pollReleases()
}

// pollReleases reports to the core, in order, the generations whose
// revoked claims are all released.
func (d *driver) pollReleases() {
	for len(d.releases) > 0 {
		r := &d.releases[0]
		for len(r.pending) > 0 {
			select {
			case <-r.pending[0]:
				r.pending = r.pending[1:]
			default:
				return
			}
		}
		gen := r.gen
		d.releases = d.releases[1:]
		d.m.dropUnwanted() // the reconciles of the keys that moved away have returned
		if gen > 0 {
			d.m.withCore(func(c *core) { c.released(gen) })
			d.stepAt = d.m.now() // step at once: the list may be published now
		}
	}
}

// renew sends the next write of the Lease if one is asked for and none is
// in flight.
//
// Once the replica is revoking its claims (a stop or a lost Lease), no
// renewal starts: the one in flight, if any, is the last, no read follows
// its conflict, and the leave (or Run's return) follows once it is
// answered or abandoned, so a stop takes at most that write's timeout plus
// RenewDeadline however the API server answers.
func (d *driver) renew() {
	if d.writing || !d.writeNow || d.stopping() {
		return
	}
	d.writeNow = false
	d.writing = true
	d.sendUpdate(reqRenew, d.writeTimeout())
}

func (d *driver) sendUpdate(kind requestKind, timeout time.Duration) {
	var l *coordinationv1.Lease
	var seq uint64
	d.m.withCore(func(c *core) {
		l = c.nextWrite(d.m.now(), d.m.wall())
		seq = c.seq
	})
	d.out.send(request{Kind: kind, Lease: l, Seq: seq, Timeout: timeout, Sent: d.m.now()})
}

func (d *driver) sendCreate() {
	var l *coordinationv1.Lease
	var seq uint64
	d.m.withCore(func(c *core) {
		l = c.initialLease(d.m.now(), d.m.wall())
		seq = c.seq
	})
	d.joining = true
	d.out.send(request{Kind: reqCreate, Lease: l, Seq: seq, Timeout: d.writeTimeout(), Sent: d.m.now()})
}

// sendLeave publishes that this replica left, within the stop's
// deadline; past it, the Lease is left to expire.
func (d *driver) sendLeave() {
	t, ok := d.stopTimeout(d.writeTimeout())
	if !ok {
		d.logger.Info("Could not publish within RenewDeadline that this replica left; the Lease expires")
		d.left()
		return
	}
	d.leaveTries++
	d.sendUpdate(reqLeave, t)
}

// deleteOwn deletes this replica's Lease in the version l that this
// process wrote (the one that published that it left, or its create), and
// no other.
func (d *driver) deleteOwn(l *coordinationv1.Lease) {
	d.sendDeleteOwn(staleLease{name: l.Name, uid: l.UID, resourceVersion: l.ResourceVersion})
}

func (d *driver) sendDeleteOwn(s staleLease) {
	t, ok := d.stopTimeout(d.readTimeout())
	if !ok {
		d.ownDeleted(errors.New("shard: no time left within RenewDeadline of the stop"))
		return
	}
	d.deleteTries++
	d.out.send(request{Kind: reqDeleteOwn, Stale: s, Timeout: t})
}

// ownDeleted ends a stop once this replica's Lease is deleted, or err
// says it was not.
func (d *driver) ownDeleted(err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		d.logger.Error(err, "Could not delete the membership Lease; it expires on its own")
	}
	if d.phase == phaseJoining {
		d.finish(errStoppedJoining)
		return
	}
	d.left()
}

// answered handles the answer to r: got is the Lease the API server
// answered with, if any.
func (d *driver) answered(r request, got *coordinationv1.Lease, err error) {
	if err != nil {
		got = nil // typed clients answer an empty object with an error
	}
	m := d.m
	switch r.Kind {
	case reqCreate:
		d.joining = false
		if err != nil && !apierrors.IsAlreadyExists(err) && mayPass(err) {
			d.createMayLand = true
		}
		if d.phase != phaseJoining {
			return
		}
		if d.stopJoin {
			if err == nil {
				d.stoppedJoining(got, nil)
			} else {
				d.checkJoin()
			}
			return
		}
		switch {
		case err == nil:
			m.withCore(func(c *core) { c.created(got) })
			d.joined()
		case apierrors.IsAlreadyExists(err):
			d.joining = true
			d.out.send(request{Kind: reqTakeOver, Timeout: d.readTimeout()})
		default:
			d.joinFailed(r.Kind, err)
		}
	case reqCreateLeft:
		d.joining = false
		switch {
		case err == nil:
			d.logger.Info("Left a Lease marked as left, so that a create abandoned before fails; the others delete it")
			d.finish(errStoppedJoining)
		case apierrors.IsAlreadyExists(err):
			d.checkJoin() // a create landed meanwhile: read it, and delete it if it is this process's
		default:
			d.logger.Info("Could not mark the Lease as left at a stop while joining; if a create lands, it expires", "err", err.Error())
			d.finish(errStoppedJoining)
		}
	case reqTakeOver:
		d.joining = false
		if d.phase != phaseJoining {
			return
		}
		if d.stopJoin {
			d.stoppedJoining(got, err)
			return
		}
		if apierrors.IsNotFound(err) {
			return // gone since the create met it: create it at the next turn
		}
		if err != nil {
			d.joinFailed(r.Kind, err)
			return
		}
		d.logger.Info("Taking over the Lease a former process of this identity left", "holder", ptr.Deref(got.Spec.HolderIdentity, ""))
		m.withCore(func(c *core) { c.tookOverLease(got, m.now()) })
		d.writeNow = true
		d.joined()
	case reqRenew:
		m.withCore(func(c *core) { c.writeDone(r.Seq, got, apierrors.IsConflict(err)) })
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			d.writing = false
			d.lose(fmt.Errorf("%w: Lease %s/%s was deleted", leader.ErrLeaseLost, m.cfg.Namespace, m.lease))
			return
		case apierrors.IsConflict(err) && !d.stopping():
			d.out.send(request{Kind: reqRefresh, Timeout: d.readTimeout()})
			return
		case apierrors.IsConflict(err):
			// Revoking: no read now, which would hold up the leave by
			// up to RetryPeriod past the renewal in flight; the leave
			// reads the Lease after its own conflict, within the
			// stop's deadline.
		default:
			d.logger.V(2).Info("Could not renew the membership Lease", "err", err.Error())
			if d.tookWholeTimeout(r) {
				// It hung for its whole timeout: the next attempt
				// goes now, not a RetryPeriod after this one went,
				// so that it still lands within the renew deadline.
				// One answered sooner, whatever its error, waits for
				// the next renewal due. (A replica revoking its
				// claims sends none: see renew.)
				d.writeNow = true
			}
		}
		d.writing = false
		d.renew()
	case reqRefresh:
		if err == nil {
			m.withCore(func(c *core) { c.refreshed(got) })
		}
		d.writing = false
		d.renew()
	case reqLeave:
		m.withCore(func(c *core) { c.writeDone(r.Seq, got, apierrors.IsConflict(err)) })
		switch {
		case err == nil:
			d.deleteOwn(got)
		case apierrors.IsNotFound(err):
			d.left() // deleted already
		case apierrors.IsConflict(err) && d.leaveTries < maxLeaveTries:
			t, ok := d.stopTimeout(d.readTimeout())
			if !ok {
				d.logger.Info("Could not publish within RenewDeadline that this replica left; the Lease expires")
				d.left()
				return
			}
			d.out.send(request{Kind: reqRefreshLeave, Timeout: t})
		case mayPass(err) && d.leaveTries < maxLeaveTries:
			// It hung, or the server failed: it may have landed or not.
			// Sent again on the version this process knows, it either
			// lands or conflicts with the one that did.
			d.logger.V(2).Info("Could not publish that this replica left; trying again", "err", err.Error())
			d.sendLeave()
		default:
			// The Lease is left as it is, to expire: deleting a version
			// this process did not write could take it from another
			// process of the identity.
			d.logger.Info("Could not publish that this replica left; the Lease expires", "err", err.Error())
			d.left()
		}
	case reqRefreshLeave:
		var ours bool
		if err == nil {
			m.withCore(func(c *core) {
				c.refreshed(got)
				ours = parseStamp(got.Annotations[annotationWriter]).incarnation == c.incarnation
			})
		}
		if !ours {
			// Another process of this identity wrote the Lease (or it is
			// gone): that process holds it now.
			d.left()
			return
		}
		d.sendLeave() // once more, on the version just read
	case reqDeleteOwn:
		if retryDelete(err) && mayPass(err) && d.deleteTries < maxDeleteTries {
			// It hung, or the server failed: it may not have landed.
			d.logger.V(2).Info("Could not delete the membership Lease; trying again", "err", err.Error())
			d.sendDeleteOwn(r.Stale)
			return
		}
		d.ownDeleted(err)
	case reqDeleteStale:
		switch {
		case err == nil:
			d.logger.Info("Deleted the Lease of a member that left", "left", r.Stale.name)
		case retryDelete(err):
			m.withCore(func(c *core) { c.deleteFailed(r.Stale.name) })
		}
	}
}

// joined starts the informer and the renewals once the Lease exists.
func (d *driver) joined() {
	d.phase = phaseRunning
	d.logger.Info("Joined the group")
	d.renewAt = d.m.now() + d.m.cfg.RetryPeriod
	d.out.startInformer()
	d.renew()
}

// joinFailed tries to join again after RetryPeriod if err, the answer to
// the request of kind failed with, may pass, and gives up otherwise.
func (d *driver) joinFailed(kind requestKind, err error) {
	verb := "creating"
	if kind == reqTakeOver {
		verb = "reading the existing"
	}
	err = fmt.Errorf("shard: %s Lease %s/%s: %w", verb, d.m.cfg.Namespace, d.m.lease, err)
	if !mayPass(err) {
		d.finish(err)
		return
	}
	d.logger.Error(err, "Could not join the group; trying again")
	d.joinAt = d.m.now() + d.m.cfg.RetryPeriod
}

// context returns the context r is sent with: it ends with parent, or
// once r.Timeout has passed, so that a request that hangs is abandoned in
// time to send another.
func (r request) context(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, r.Timeout)
}

// do sends r through leases and returns the answer.
func (r request) do(ctx context.Context, m *Membership) (*coordinationv1.Lease, error) {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	switch r.Kind {
	case reqCreate, reqCreateLeft:
		return leases.Create(ctx, r.Lease, metav1.CreateOptions{})
	case reqTakeOver, reqRefresh, reqRefreshLeave:
		return leases.Get(ctx, m.lease, metav1.GetOptions{})
	case reqRenew, reqLeave:
		return leases.Update(ctx, r.Lease, metav1.UpdateOptions{})
	case reqDeleteOwn, reqDeleteStale:
		return nil, leases.Delete(ctx, r.Stale.name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.Stale.uid, ResourceVersion: &r.Stale.resourceVersion},
		})
	}
	return nil, fmt.Errorf("shard: unknown request %d", r.Kind)
}

// writeTimeout is how long a write of the replica's own Lease may take:
// one that hangs is abandoned in time for another attempt within
// RenewDeadline.
func (d *driver) writeTimeout() time.Duration {
	c := d.m.cfg
	return lease.RequestTimeout(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
}

// readTimeout is how long a read or a delete of a Lease may take:
// RetryPeriod, and no less than lease.MinRequestTimeout, which leaves a
// real API server time to answer.
func (d *driver) readTimeout() time.Duration {
	return max(d.m.cfg.RetryPeriod, lease.MinRequestTimeout)
}

// startStopBudget starts the deadline of a stop's requests, once.
func (d *driver) startStopBudget() {
	if d.stopBy == 0 {
		d.stopBy = d.m.now() + d.m.cfg.RenewDeadline
	}
}

// stopTimeout is the timeout of a request of a stop that would otherwise
// be allowed t: no later than the stop's deadline. ok is false once that
// has passed.
func (d *driver) stopTimeout(t time.Duration) (timeout time.Duration, ok bool) {
	left := d.stopBy - d.m.now()
	if left <= 0 {
		return 0, false
	}
	return min(t, left), true
}

// tookWholeTimeout reports whether the write r took (nearly) its whole
// timeout, on the membership's monotonic clock: a request that hung, not
// one answered at once with an error, whatever the error says.
func (d *driver) tookWholeTimeout(r request) bool {
	return d.m.now()-r.Sent >= r.Timeout-r.Timeout/10
}
