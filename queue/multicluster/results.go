package multicluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue"
)

// The condition type and reasons of Results.Status.
const (
	// ConditionReady is the type of the overall condition: True when
	// every member that should have the hub object is Ready.
	ConditionReady = "Ready"
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
	// ReasonNotHeld is a member's reason while this replica does not
	// hold it: the Fleet has not engaged it yet, or, with WithSharding,
	// it is another replica's.
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

// MemberStatus is one member's entry in a hub object's status: the
// member's name and its result, or, where the Fleet does not have the
// member ready, why not.
//
// It is one flat entry per member, named by the member, with a readiness,
// a reason and a message, the observed generation and what the member
// holds, under the overall condition that Results.Status builds: the
// shape fleet operators give the per-member status of an object they
// propagate, because it answers at a glance the two questions asked of
// it (is it everywhere it should be; if not, where not and why) and it
// keeps what the member reports, typed, beside it. A list sorted by
// member name rather than a map keeps the status stable and lets an API
// declare it as a list keyed by cluster.
type MemberStatus[V any] struct {
	// Cluster is the member's name.
	Cluster string `json:"cluster"`
	MemberResult[V]
}

// Results keeps, for each hub key (K, the key of the hub object's
// controller, usually a cache.ObjectName), the latest MemberResult of
// each member of a Fleet: the per-member reconciles report with Set, the
// hub object's reconcile builds its status with Status.
//
// A Set that changes a member's result adds the hub key to the hub
// controller (an equal result adds nothing). A member's results are
// dropped when it leaves the Fleet or moves to another replica (its hub
// keys are added then too), not while it is merely not ready: Status
// then reports it Unreachable, with the last result's Value and
// ObservedGeneration. Forget drops a hub key's results, when its object
// is gone.
//
// The results live in this process: with WithSharding a replica knows
// those of its own members only, and lists the other members NotHeld.
// Results is safe for concurrent use.
type Results[K comparable, V any] struct {
	fleet  fleetView
	q      queue.Enqueuer[K]
	mu     sync.Mutex
	byHub  map[K]map[string]MemberResult[V] // guarded by mu
	byName map[string]map[K]struct{}        // the hub keys with a result of each member; guarded by mu
}

// fleetView is what Results needs of a Fleet.
type fleetView interface {
	Status(cluster string) (Status, bool)
	// ifHeld calls fn with the Fleet's lock held if this replica holds
	// cluster, and reports whether it did.
	ifHeld(cluster string, fn func()) bool
}

// NewResults returns the Results of the hub objects of f, which adds hub
// keys to q (the hub object's controller) when their results change.
// The results' Value type V is given, the others inferred:
// multicluster.NewResults[string](fleet, hub).
func NewResults[V any, T any, K comparable](f *Fleet[T], q queue.Enqueuer[K]) (*Results[K, V], error) {
	if f == nil || q == nil {
		return nil, errors.New("multicluster: NewResults needs a fleet and a queue")
	}
	r := &Results[K, V]{fleet: f, q: q, byHub: map[K]map[string]MemberResult[V]{}, byName: map[string]map[K]struct{}{}}
	f.mu.Lock()
	f.onLeave = append(f.onLeave, r.drop)
	f.mu.Unlock()
	return r, nil
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
// equality.Semantic.DeepEqual). The result of a cluster this replica does
// not hold (it left, or moved) is dropped.
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
}

// drop drops the results of a cluster that left, and adds their hub
// keys.
func (r *Results[K, V]) drop(cluster string) {
	r.mu.Lock()
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

// Status builds the status of the hub object of key hub, at generation
// (its metadata.generation; 0 accepts a result of any generation), over
// clusters, the members that should have it (fleet.Members() for every
// member): one MemberStatus per cluster, sorted by name, and the overall
// condition.
//
// A member is Ready in the list when its result is Ready and for
// generation. Otherwise its entry says why, with the result's Value and
// ObservedGeneration when one is kept: Unreachable (the Fleet does not
// have it ready; the message is Fleet.Status's Err), NotHeld (not held by
// this replica), Pending (no result for generation yet), or the result's
// own Reason and Message.
//
// The condition is of type ConditionReady, for generation: True with
// ReasonAllMembersReady when every member is Ready (also when clusters is
// empty), False otherwise, with ReasonMembersUnreachable if a member is
// Unreachable or NotHeld, else ReasonMembersNotReady, and a message
// naming the members that are not Ready and why, at most 1024 characters
// long. Its LastTransitionTime is left zero: set it with
// meta.SetStatusCondition or a condition.Writer, which keep the time of
// the last transition.
func (r *Results[K, V]) Status(hub K, generation int64, clusters []string) ([]MemberStatus[V], metav1.Condition) {
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
	entries := make([]MemberStatus[V], 0, len(names))
	for _, name := range names {
		res, has := kept[name]
		e := MemberStatus[V]{Cluster: name, MemberResult: res}
		st, held := r.fleet.Status(name)
		switch {
		case !held:
			e.Ready, e.Reason, e.Message = false, ReasonNotHeld, "not engaged here: joining, or another replica's"
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
		entries = append(entries, e)
	}
	return entries, Aggregate(generation, entries)
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
// Results.Status does (see there): for a hub reconcile that builds its
// entries itself.
func Aggregate[V any](generation int64, entries []MemberStatus[V]) metav1.Condition {
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
