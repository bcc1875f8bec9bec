package multicluster

import (
	"reflect"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// clusterQueue is the queue of Cluster.Queue: it tags the keys of one
// cluster's handlers with the cluster's name, passes them on while the
// cluster is ready, and otherwise has the Fleet's keeper hold them (or
// drop them, once the cluster is no longer this replica's member).
type clusterQueue struct {
	m *member
	q informer.Queue[Key]
	// token files the keys held for q: q itself when it is a pointer (a
	// controller), so that the queues of every attempt to engage the
	// cluster share one set of held keys; otherwise this queue, whose
	// held keys the next attempt drops (its informers list them again).
	token any
	// attempt is the member's attempt whose engage function made this
	// queue.
	attempt int
}

var _ informer.Queue[cache.ObjectName] = (*clusterQueue)(nil)

func newClusterQueue(m *member, attempt int, q informer.Queue[Key]) *clusterQueue {
	c := &clusterQueue{m: m, q: q, attempt: attempt}
	c.token = c
	if v := reflect.ValueOf(q); v.Kind() == reflect.Pointer && !v.IsNil() {
		c.token = q
	}
	return c
}

// Add implements informer.Queue.
func (c *clusterQueue) Add(name cache.ObjectName) { c.add(name, false) }

// AddLowPriority implements informer.Queue.
func (c *clusterQueue) AddLowPriority(name cache.ObjectName) { c.add(name, true) }

func (c *clusterQueue) add(name cache.ObjectName, low bool) {
	m := c.m
	m.mu.Lock()
	if !m.lockedReady() {
		// The keys of a queue of an earlier attempt whose set was
		// dropped are not held again.
		if c.token == any(c) && c.attempt != m.attempt {
			m.mu.Unlock()
			return
		}
		m.keys.lockedHold(m.name, c.token, c.q, name, low)
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
	q     informer.Queue[Key]
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

// lockedHold holds the key name of cluster for q (filed under token), if
// the keys of cluster are held; it reports whether it did.
func (k *keeper) lockedHold(cluster string, token any, q informer.Queue[Key], name cache.ObjectName, low bool) bool {
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
		h = &heldKeys{token: token, q: q, pending: map[cache.ObjectName]bool{}}
		if k.held == nil {
			k.held = map[string][]*heldKeys{}
		}
		k.held[cluster] = append(k.held[cluster], h)
	}
	fresh, seen := h.pending[name]
	if !seen {
		h.order = append(h.order, name)
	}
	h.pending[name] = fresh || !low
	return true
}

// lockedTake takes the keys held for cluster, once it is ready: the
// function returned passes them to their queues, and must be called
// without the Fleet's mu (a controller asks the Fleet whether it owns
// each key).
func (k *keeper) lockedTake(cluster string) (release func()) {
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

// lockedNewAttempt drops the keys held for cluster by the queues of
// earlier attempts that are not pointers (filed under their
// clusterQueue): a new attempt's informers list the cluster again, and
// its own queues hold their keys, so that the keys held stay one set per
// queue rather than one per failed attempt.
func (k *keeper) lockedNewAttempt(cluster string, attempt int) {
	held := k.held[cluster]
	kept := held[:0]
	for _, h := range held {
		if c, ok := h.token.(*clusterQueue); ok && c.attempt < attempt {
			continue
		}
		kept = append(kept, h)
	}
	clear(held[len(kept):])
	if len(kept) == 0 {
		delete(k.held, cluster)
		return
	}
	k.held[cluster] = kept
}

// lockedPrune drops the keys held for the clusters whose keys are no
// longer held.
func (k *keeper) lockedPrune() {
	for cluster := range k.held {
		if !k.lockedHolds(cluster) {
			delete(k.held, cluster)
		}
	}
}
