package multicluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1"
)

// The condition type and reasons of Results.Status.
const (
	// ConditionReady is the type of the overall condition: True when
	// every member that should have the hub object is Ready.
	ConditionReady = "Ready"
	// ReasonFleetNotSynced: the condition is Unknown, the Fleet has not
	// learnt its members from its Provider yet (Fleet.HasSynced).
	ReasonFleetNotSynced = "FleetNotSynced"
	// ReasonFleetStopping: the condition is Unknown, the Fleet is
	// stopping (its Run's context ended): its members go not ready
	// because this process lets them go, not because they fail.
	ReasonFleetStopping = "FleetStopping"
	// ReasonAllMembersReady: every member that should have it is Ready.
	ReasonAllMembersReady = "AllMembersReady"
	// ReasonMembersUnreachable: some member is Unreachable or NotHeld
	// (and perhaps others not ready).
	ReasonMembersUnreachable = "MembersUnreachable"
	// ReasonMembersNotReady: every member is reachable, some are not
	// Ready (failed, or Pending).
	ReasonMembersNotReady = "MembersNotReady"

	// ReasonUnreachable is a member's reason while the Fleet does not
	// have it ready (Fleet.Status): engaging, not answering, or refused
	// by its Provider; the message is the Status's Err.
	ReasonUnreachable = "Unreachable"
	// ReasonNotHeld is a member's reason while the Fleet does not hold
	// it: it has not started to engage it yet.
	ReasonNotHeld = "NotHeld"
	// ReasonPending is a member's reason while it is ready but its
	// reconcile has reported no result for the hub object's current
	// generation.
	ReasonPending = "Pending"
)

// MemberResult is what the reconcile of a hub object (an object of the
// management cluster applied to every member) found in one member.
type MemberResult[V any] struct {
	// Ready is true when the member holds what the hub object asks.
	Ready bool `json:"ready"`
	// Reason is a CamelCase word saying why it is (not) Ready, as in a
	// condition.
	Reason string `json:"reason,omitempty"`
	// Message says it for people.
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation of the hub object that the
	// result is for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Value is what the member holds for the hub object (the applied
	// object's name and resourceVersion, its replicas, its own status),
	// as the operator chooses.
	Value V `json:"value"`
}

// MemberStatus is one member's entry in a hub object's status, as
// Results.Status builds it: the member's name, whether it is Ready, its
// reason and message, and the hub object's generation its result is for.
// It is fleetv1.MemberStatus, which an API type declares (see there): one
// flat entry per member, in a list sorted by member name and keyed by
// cluster, under the overall condition, the shape fleet operators give
// the per-member status of an object they propagate (is it everywhere it
// should be; if not, where not and why). The Value of a member's result
// is not in it: the hub reconcile reads it with Results.Get, or an API
// type's own entry embeds MemberStatus (`json:",inline"`) beside it.
type MemberStatus = fleetv1.MemberStatus

// Results keeps, for each hub key (K, the key of the hub object's
// controller, usually a cache.ObjectName), the latest MemberResult of
// each member of a Fleet: the per-member reconciles report with Set, the
// hub object's reconcile builds its status with Status.
//
// A Set that changes a member's result adds the hub key to the hub
// controller (an equal result adds nothing). A member's results are
// dropped when it leaves the Fleet, no longer reported by its Provider
// (its hub keys are added then too, and those of a Status asked before
// the Fleet synced when it syncs), not when it is engaged again with new
// credentials or stopped with the Fleet, nor while it is merely not ready: Status then reports it Unreachable,
// with the last result's ObservedGeneration. The end of Reported's wait
// after the Fleet's first sync adds the hub keys Reported answered false
// for (see there). Nothing else adds a hub key: a member that becomes
// not ready, or ready again, re-queues no hub key through Results; give
// the hub controller an OnMembers Watch for that.
// Forget drops a hub key's results, when its object is gone.
//
// The results live in this process, so the hub controller's status needs
// every member held in one process: NewResults refuses a Fleet made with
// WithSharding (run the Fleet unsharded, and the operator leader-elected
// for several replicas). Results is safe for concurrent use.
type Results[K comparable, V any] struct {
	fleet  fleetView
	q      queue.Enqueuer[K]
	mu     sync.Mutex
	byHub  map[K]map[string]MemberResult[V] // guarded by mu
	byName map[string]map[K]struct{}        // the hub keys with a result of each member; guarded by mu
	// waiting holds the hub keys whose Status was asked before the Fleet
	// synced, added when it syncs; synced is set then. Guarded by mu.
	waiting map[K]struct{}
	synced  bool
	// restarted holds the members ready when the Fleet first synced,
	// whose first result for a hub key Reported waits for, until
	// restartedUntil; a member leaves it when it goes not ready. heldBack
	// holds the hub keys Reported answered false for, added when waitEnd
	// fires (at restartedUntil); stopped is set when the Fleet starts to
	// stop, which stops waitEnd. Guarded by mu.
	restarted      map[string]struct{}
	restartedUntil time.Time
	heldBack       map[K]struct{}
	waitEnd        *time.Timer
	stopped        bool
}

// reportWait bounds how long after the Fleet's first sync Reported waits
// for the first result of the members ready then.
var reportWait = 2 * time.Minute

// fleetView is what Results needs of a Fleet.
type fleetView interface {
	Status(cluster string) (Status, bool)
	Members() []string
	HasSynced() bool
	// isStopping reports whether the Fleet has started to stop.
	isStopping() bool
	// ifHeld calls fn with the Fleet's lock held if this replica holds
	// cluster, and reports whether it did.
	ifHeld(cluster string, fn func()) bool
}

// NewResults returns the Results of the hub objects of f, which adds hub
// keys to q (the hub object's controller) when their results change.
// The results' Value type V is given, the others inferred:
// multicluster.NewResults[string](fleet, hub).
//
// A Fleet made with WithSharding is refused with an error: each replica
// would hold the results of its own members only, and no replica could
// build the status of a hub object over all of them.
func NewResults[V any, T any, K comparable](f *Fleet[T], q queue.Enqueuer[K]) (*Results[K, V], error) {
	if f == nil || q == nil {
		return nil, errors.New("multicluster: NewResults needs a fleet and a queue")
	}
	if f.gate != nil {
		return nil, fmt.Errorf("multicluster: fleet %q is sharded (WithSharding): the status aggregated across members needs every member in one process; run the fleet unsharded, the operator leader-elected", f.name)
	}
	r := &Results[K, V]{fleet: f, q: q, byHub: map[K]map[string]MemberResult[V]{}, byName: map[string]map[K]struct{}{}, waiting: map[K]struct{}{}}
	f.mu.Lock()
	f.onLeave = append(f.onLeave, r.drop)
	f.onSynced = append(f.onSynced, r.fleetSynced)
	f.onNotReady = append(f.onNotReady, r.lockedNotReady)
	if f.isStopping() {
		r.stopped = true
	} else {
		f.onStop = append(f.onStop, r.stop)
	}
	f.mu.Unlock()
	f.runSyncedHooks() // at once if the Fleet has synced already
	return r, nil
}

// fleetSynced adds the hub keys whose Status was Unknown because the
// Fleet had not synced, and starts Reported's wait for the members ready
// then.
func (r *Results[K, V]) fleetSynced() {
	restarted := map[string]struct{}{}
	for _, name := range r.fleet.Members() {
		if st, held := r.fleet.Status(name); held && st.Ready {
			restarted[name] = struct{}{}
		}
	}
	r.mu.Lock()
	r.synced = true
	if len(restarted) > 0 && !r.stopped {
		r.restarted, r.restartedUntil = restarted, time.Now().Add(reportWait)
		r.heldBack = map[K]struct{}{}
		r.waitEnd = time.AfterFunc(reportWait, r.endWait)
	}
	hubs := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	for hub := range hubs {
		r.q.Add(hub)
	}
}

// endWait ends Reported's wait, and adds the hub keys it answered false
// for: their reconciles wrote nothing, and may write now.
func (r *Results[K, V]) endWait() {
	r.mu.Lock()
	hubs := r.heldBack
	r.restarted, r.heldBack, r.waitEnd = nil, nil, nil
	r.mu.Unlock()
	for hub := range hubs {
		r.q.Add(hub)
	}
}

// stop ends Reported's wait without adding anything: the Fleet stops.
func (r *Results[K, V]) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.waitEnd != nil {
		r.waitEnd.Stop()
	}
	r.restarted, r.heldBack, r.waitEnd = nil, nil, nil
}

// lockedNotReady stops Reported's wait for cluster, which went not ready
// (or is engaged again): ready again, it is a member that became ready
// after the first sync. The Fleet's mu is held.
func (r *Results[K, V]) lockedNotReady(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.restarted, cluster)
}

// isStopping is fleetView's.
func (f *Fleet[T]) isStopping() bool {
	select {
	case <-f.stopping:
		return true
	default:
		return false
	}
}

// ifHeld is fleetView's.
func (f *Fleet[T]) ifHeld(cluster string, fn func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.members[cluster] == nil {
		return false
	}
	fn()
	return true
}

// Set keeps res as cluster's result for hub, and adds hub to the hub
// controller if it differs from the result kept before (compared with
// equality.Semantic.DeepEqual). The result of a cluster the Fleet does
// not hold (it left) is dropped.
func (r *Results[K, V]) Set(hub K, cluster string, res MemberResult[V]) {
	changed := false
	r.fleet.ifHeld(cluster, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		results := r.byHub[hub]
		if old, ok := results[cluster]; ok && equality.Semantic.DeepEqual(old, res) {
			return
		}
		if results == nil {
			results = map[string]MemberResult[V]{}
			r.byHub[hub] = results
		}
		results[cluster] = res
		if r.byName[cluster] == nil {
			r.byName[cluster] = map[K]struct{}{}
		}
		r.byName[cluster][hub] = struct{}{}
		changed = true
	})
	if changed {
		r.q.Add(hub)
	}
}

// Forget drops every result of hub: for a hub object that is gone.
func (r *Results[K, V]) Forget(hub K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for cluster := range r.byHub[hub] {
		delete(r.byName[cluster], hub)
		if len(r.byName[cluster]) == 0 {
			delete(r.byName, cluster)
		}
	}
	delete(r.byHub, hub)
	delete(r.heldBack, hub)
}

// drop drops the results of a cluster that left, and adds their hub
// keys.
func (r *Results[K, V]) drop(cluster string) {
	r.mu.Lock()
	delete(r.restarted, cluster)
	hubs := r.byName[cluster]
	delete(r.byName, cluster)
	for hub := range hubs {
		delete(r.byHub[hub], cluster)
		if len(r.byHub[hub]) == 0 {
			delete(r.byHub, hub)
		}
	}
	r.mu.Unlock()
	for hub := range hubs {
		r.q.Add(hub)
	}
}

// Get returns cluster's result for hub, if one is kept.
func (r *Results[K, V]) Get(hub K, cluster string) (MemberResult[V], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.byHub[hub][cluster]
	return res, ok
}

// Reported reports whether the hub reconcile of hub may write its status
// over clusters, or should write nothing and keep the entries written
// before; written is the number of member entries in the status the hub
// object holds now (len(obj.Status.Members)). The results live in this process,
// so after a restart of the operator Status lists every ready member
// Pending ("no result yet") until its first reconcile reports, although
// the status the hub object holds from before the restart may still be
// true. Reported is false only while all of these hold: written is not
// 0 (a status with no entries, that of a hub object created since, has
// nothing to keep), some member of clusters that was ready when the
// Fleet first synced (the members this process found at its start) has
// been ready since and has no result for hub kept yet, not two minutes
// have passed since that sync, and every member of clusters is ready (a
// member not ready, not held or refused is a change to write at once:
// Status lists it Unreachable or NotHeld). A member that joins, or
// becomes ready, after the first sync is never waited for (Status lists
// it Pending until it reports), nor is one that went not ready and came
// back, or left and came back. The first Set of each member adds the hub
// key again, and so does the end of the two minutes for every hub key
// Reported answered false for: a reconcile that wrote nothing because
// Reported was false runs again once it may write, with nothing of its
// own to re-queue it. (The end of the wait adds nothing once the Fleet
// has started to stop.)
func (r *Results[K, V]) Reported(hub K, clusters []string, written int) bool {
	if written == 0 {
		return true
	}
	r.mu.Lock()
	var waitFor []string
	if len(r.restarted) > 0 && time.Now().Before(r.restartedUntil) {
		for _, name := range clusters {
			if _, ok := r.restarted[name]; !ok {
				continue
			}
			if _, ok := r.byHub[hub][name]; !ok {
				waitFor = append(waitFor, name)
			}
		}
	}
	r.mu.Unlock()
	if len(waitFor) == 0 {
		return true
	}
	for _, name := range clusters {
		if st, held := r.fleet.Status(name); !held || !st.Ready {
			return true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.heldBack == nil {
		return true // the wait ended meanwhile
	}
	r.heldBack[hub] = struct{}{}
	return false
}

// Status builds the status of the hub object of key hub, at generation
// (its metadata.generation; 0 accepts a result of any generation), over
// clusters, the members that should have it (fleet.Members() for every
// member, those its Provider refused included): one MemberStatus per
// cluster, sorted by name, and the overall condition.
//
// A member is Ready in the list when its result is Ready and for
// generation. Otherwise its entry says why, with the result's
// ObservedGeneration when one is kept: Unreachable (the Fleet does not
// have it ready, or its Provider refused it; the message is
// Fleet.Status's Err), NotHeld (not held yet), Pending (no result for
// generation yet), or the result's own Reason and Message. Each entry's
// message is at most 1024 characters long, as the condition's.
//
// The condition is of type ConditionReady, for generation. While the
// Fleet has not synced (Fleet.HasSynced false: it does not know all its
// members yet), it is Unknown with ReasonFleetNotSynced, whatever the
// entries say, and the hub key is added to the hub controller when the
// Fleet syncs: a hub reconcile that skips its status write while the
// reason is ReasonFleetNotSynced runs again then, and a restart of the
// operator does not flap a status that still holds. Once the Fleet has
// started to stop (its Run's context ended), it is Unknown with
// ReasonFleetStopping, whatever the entries say: its members go not ready
// then, each listed Unreachable, because this process stops, not because
// they fail; a hub reconcile in flight that skips its status write for
// this reason too leaves the status as the next run of the operator finds
// it. Otherwise it is Aggregate's: True with
// ReasonAllMembersReady when every member is Ready (also when clusters is
// empty), False otherwise, with ReasonMembersUnreachable if a member is
// Unreachable or NotHeld, else ReasonMembersNotReady, and a message
// naming the members that are not Ready and why, at most 1024 characters
// long. Its LastTransitionTime is left zero: set it with
// meta.SetStatusCondition or a condition.Writer, which keep the time of
// the last transition.
func (r *Results[K, V]) Status(hub K, generation int64, clusters []string) ([]MemberStatus, metav1.Condition) {
	// The key waits for the Fleet to sync before HasSynced is asked, so
	// that it is added when it syncs, whenever that is.
	r.mu.Lock()
	if !r.synced {
		r.waiting[hub] = struct{}{}
	}
	r.mu.Unlock()
	synced := r.fleet.HasSynced()
	names := slices.Clone(clusters)
	slices.Sort(names)
	names = slices.Compact(names)
	r.mu.Lock()
	kept := make(map[string]MemberResult[V], len(r.byHub[hub]))
	for _, name := range names {
		if res, ok := r.byHub[hub][name]; ok {
			kept[name] = res
		}
	}
	r.mu.Unlock()
	entries := make([]MemberStatus, 0, len(names))
	for _, name := range names {
		res, has := kept[name]
		e := MemberStatus{Cluster: name, Ready: res.Ready, Reason: res.Reason, Message: res.Message, ObservedGeneration: res.ObservedGeneration}
		st, held := r.fleet.Status(name)
		switch {
		case !held:
			e.Ready, e.Reason, e.Message = false, ReasonNotHeld, "not engaged yet"
		case !st.Ready:
			e.Ready, e.Reason, e.Message = false, ReasonUnreachable, "not engaged yet"
			if st.Err != nil {
				e.Message = st.Err.Error()
			}
		case !has:
			e.Ready, e.Reason, e.Message = false, ReasonPending, "no result yet"
		case generation != 0 && res.ObservedGeneration != generation:
			e.Ready, e.Reason = false, ReasonPending
			e.Message = fmt.Sprintf("generation %d not applied yet (last applied: %d)", generation, res.ObservedGeneration)
		}
		e.Message = cut(e.Message, maxConditionMessage)
		entries = append(entries, e)
	}
	cond := Aggregate(generation, entries)
	// Asked after the members' statuses: a member the stop made not ready
	// was read so after the Fleet started to stop.
	switch {
	case r.fleet.isStopping():
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonFleetStopping
		cond.Message = "the fleet is stopping"
	case !synced:
		cond.Status, cond.Reason = metav1.ConditionUnknown, ReasonFleetNotSynced
		cond.Message = "the fleet has not learnt its members from its provider yet"
	}
	return entries, cond
}

// maxConditionMessage bounds the message of the condition of Aggregate;
// maxMemberMessage a member's message in it, and maxListed how many
// members it names.
const (
	maxConditionMessage = 1024
	maxMemberMessage    = 120
	maxListed           = 8
)

// Aggregate returns the overall condition of entries for generation, as
// Results.Status does for a Fleet synced and not stopping (see there): for a hub reconcile
// that builds its entries itself.
func Aggregate(generation int64, entries []MemberStatus) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: generation}
	var failing []string
	unreachable := false
	for _, e := range entries {
		if e.Ready {
			continue
		}
		if e.Reason == ReasonUnreachable || e.Reason == ReasonNotHeld {
			unreachable = true
		}
		if len(failing) < maxListed {
			failing = append(failing, fmt.Sprintf("%s (%s: %s)", e.Cluster, e.Reason, cut(e.Message, maxMemberMessage)))
		}
	}
	notReady := 0
	for _, e := range entries {
		if !e.Ready {
			notReady++
		}
	}
	if notReady == 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonAllMembersReady
		cond.Message = fmt.Sprintf("%d of %d members ready", len(entries), len(entries))
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, ReasonMembersNotReady
	if unreachable {
		cond.Reason = ReasonMembersUnreachable
	}
	msg := fmt.Sprintf("%d of %d members not ready: %s", notReady, len(entries), strings.Join(failing, ", "))
	if more := notReady - len(failing); more > 0 {
		msg += fmt.Sprintf(", and %d more", more)
	}
	cond.Message = cut(msg, maxConditionMessage)
	return cond
}

// cut shortens s to at most n characters (runes), ending it with "..."
// when it cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
