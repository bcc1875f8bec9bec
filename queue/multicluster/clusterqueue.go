package multicluster

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// clusterQueue is the queue of Cluster.Queue: it tags the keys of one
// cluster's handlers with the cluster's name, passes them on while the
// cluster is ready, and otherwise has the Fleet's keeper hold them (or
// drop them, once the cluster is no longer this replica's member).
type clusterQueue struct {
	m *member
	q informer.Queue[Key]
	// token files the keys held for q; slot is where the engage function
	// passed q to Cluster.Queue (see Cluster.Queue).
	token any
	slot  queueSlot
}

var _ informer.Queue[cache.ObjectName] = (*clusterQueue)(nil)

// Add implements informer.Queue.
func (c *clusterQueue) Add(name cache.ObjectName) { c.add(name, false) }

// AddLowPriority implements informer.Queue.
func (c *clusterQueue) AddLowPriority(name cache.ObjectName) { c.add(name, true) }

// Tracing implements tracing.Recorder: it reports whether the queue given
// to Cluster.Queue records triggers.
func (c *clusterQueue) Tracing() bool { return tracing.RecorderOf[Key](c.q) != nil }

// Trigger implements tracing.Recorder: it records t for the key of name in
// this cluster with the queue given to Cluster.Queue.
func (c *clusterQueue) Trigger(name cache.ObjectName, t tracing.Trigger) {
	if r := tracing.RecorderOf[Key](c.q); r != nil {
		r.Trigger(Key{Cluster: c.m.name, ObjectName: name}, t)
	}
}

func (c *clusterQueue) add(name cache.ObjectName, low bool) {
	m := c.m
	m.mu.Lock()
	if !m.lockedReady() {
		if !m.keys.lockedHold(m.name, c.token, &c.slot, c.q, name, low) {
			// Dropped: the cluster stopped being held since the key's
			// trigger was recorded.
			forgetTriggers(c.q, Key{Cluster: m.name, ObjectName: name})
		}
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	key := Key{Cluster: m.name, ObjectName: name}
	if low {
		c.q.AddLowPriority(key)
	} else {
		c.q.Add(key)
	}
}

// queues are the queues one attempt's engage function passed to
// Cluster.Queue.
type queues struct {
	byToken map[any]informer.Queue[Key]
	bySlot  map[queueSlot]any // the token of the queue passed in each slot
}

// resolve returns the token and queue of this attempt that stand for the
// queue filed under token, which was passed to Cluster.Queue in slot by
// an earlier attempt: the same queue if this attempt passed it too (a
// pointer, or a queue that is not one, filed by its slot), otherwise the
// pointer this attempt passed in the same slot. ok is false if this
// attempt passed none.
func (qs queues) resolve(token any, slot queueSlot) (any, informer.Queue[Key], bool) {
	if q, ok := qs.byToken[token]; ok {
		return token, q, true
	}
	if t, ok := qs.bySlot[slot]; ok {
		return t, qs.byToken[t], true
	}
	return nil, nil, false
}

// keeper holds the keys that arrive for a cluster that is this replica's
// member but not ready (engaging, engaged again after failed probes, or
// between the engagements of two configs), for the queue they were meant
// for, and releases them once the cluster is ready. It drops them when the
// cluster stops being this replica's member (it left, or moved to another
// replica) and when the Fleet stops. Its fields are guarded by the
// Fleet's mu, as is the engagement Set it reads.
type keeper struct {
	set      *engagement.Set[*rest.Config]
	gate     *shard.Gate[string] // nil without sharding
	stopping bool                // the Fleet stops: nothing is held
	held     map[string][]*heldKeys
}

// heldKeys are the keys held for one queue of one cluster.
type heldKeys struct {
	token any
	// slot is where the queue was passed to Cluster.Queue, nil for the
	// keys a controller holds itself (the controller is their queue in
	// every attempt).
	slot *queueSlot
	// q is the queue the keys are passed to: for a queue of
	// Cluster.Queue, the one of the latest attempt that passed it, set
	// anew by each attempt (lockedAdopt).
	q informer.Queue[Key]
	// pending is true for the keys added at least once with Add (not
	// AddLowPriority); order is the order of their first add.
	pending map[cache.ObjectName]bool
	order   []cache.ObjectName
}

// lockedHolds reports whether the keys of cluster are held while it is
// not ready: it is wanted and, sharded, this replica's, and the Fleet does
// not stop.
func (k *keeper) lockedHolds(cluster string) bool {
	return !k.stopping && k.set.IsWanted(cluster) && (k.gate == nil || k.gate.Owns(cluster))
}

// lockedHold holds the key name of cluster for q (filed under token; slot
// is where q was passed to Cluster.Queue, nil for a controller's own
// holds), if the keys of cluster are held; it reports whether it did.
func (k *keeper) lockedHold(cluster string, token any, slot *queueSlot, q informer.Queue[Key], name cache.ObjectName, low bool) bool {
	if !k.lockedHolds(cluster) {
		return false
	}
	var h *heldKeys
	for _, x := range k.held[cluster] {
		if x.token == token {
			h = x
			break
		}
	}
	if h == nil {
		h = &heldKeys{token: token, slot: slot, q: q, pending: map[cache.ObjectName]bool{}}
		if k.held == nil {
			k.held = map[string][]*heldKeys{}
		}
		k.held[cluster] = append(k.held[cluster], h)
	}
	h.lockedAdd(name, !low)
	return true
}

// lockedAdd holds name, pending if fresh.
func (h *heldKeys) lockedAdd(name cache.ObjectName, fresh bool) {
	was, seen := h.pending[name]
	if !seen {
		h.order = append(h.order, name)
	}
	h.pending[name] = was || fresh
}

// lockedAdopt files the keys held for cluster's queues of Cluster.Queue
// under the queues of an attempt whose engage function passed qs: each
// set under the queue of that attempt that stands for its own (see
// queues.resolve), two sets that now stand for one queue merged into one.
// A set for which the attempt passed no queue is kept (a later attempt
// may pass one) unless take is set: then the attempt makes the cluster
// ready, and the set, meant for a queue of an attempt that is over, is
// dropped. The keys a controller holds itself stay as they are.
func (k *keeper) lockedAdopt(cluster string, qs queues, take bool) {
	held := k.held[cluster]
	if len(held) == 0 {
		return
	}
	kept := held[:0]
	byToken := map[any]*heldKeys{}
	for _, h := range held {
		if h.slot == nil {
			kept = append(kept, h)
			continue
		}
		token, q, ok := qs.resolve(h.token, *h.slot)
		if !ok {
			if take {
				h.lockedDrop(cluster)
			} else {
				kept = append(kept, h)
			}
			continue
		}
		if x := byToken[token]; x != nil {
			for _, name := range h.order {
				x.lockedAdd(name, h.pending[name])
			}
			continue
		}
		h.token, h.q = token, q
		byToken[token] = h
		kept = append(kept, h)
	}
	clear(held[len(kept):])
	if len(kept) == 0 {
		delete(k.held, cluster)
		return
	}
	k.held[cluster] = kept
}

// lockedTake takes the keys held for cluster, once an attempt whose
// engage function passed qs to Cluster.Queue has made it ready: the
// function returned passes them to their queues (those of that attempt,
// see lockedAdopt), and must be called without the Fleet's mu (a
// controller asks the Fleet whether it owns each key).
func (k *keeper) lockedTake(cluster string, qs queues) (release func()) {
	k.lockedAdopt(cluster, qs, true)
	held := k.held[cluster]
	delete(k.held, cluster)
	return func() {
		for _, h := range held {
			for _, name := range h.order {
				key := Key{Cluster: cluster, ObjectName: name}
				if h.pending[name] {
					h.q.Add(key)
				} else {
					h.q.AddLowPriority(key)
				}
			}
		}
	}
}

// lockedPrune drops the keys held for the clusters whose keys are no
// longer held.
func (k *keeper) lockedPrune() {
	for cluster, held := range k.held {
		if !k.lockedHolds(cluster) {
			k.lockedDrop(cluster, held)
		}
	}
}

// lockedDrop drops the keys held for cluster.
func (k *keeper) lockedDrop(cluster string, held []*heldKeys) {
	for _, h := range held {
		h.lockedDrop(cluster)
	}
	delete(k.held, cluster)
}

// lockedDrop drops the triggers its queue recorded for the keys of h (see
// queue.Controller.ForgetTriggers), which are dropped: they would stay in
// the queue, and show up in a later reconcile of the key.
func (h *heldKeys) lockedDrop(cluster string) {
	for _, name := range h.order {
		forgetTriggers(h.q, Key{Cluster: cluster, ObjectName: name})
	}
}

// forgetTriggers drops the triggers q recorded for key, if q records
// triggers (see queue.Controller.ForgetTriggers).
func forgetTriggers(q informer.Queue[Key], key Key) {
	if f, ok := q.(interface{ ForgetTriggers(key Key) }); ok {
		f.ForgetTriggers(key)
	}
}
