package multicluster

import (
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
	// token files the keys held for q, the same for the queues of every
	// attempt that stand for one queue (see Cluster.Queue).
	token any
	// attempt is the member's attempt whose engage function made this
	// queue.
	attempt int
}

var _ informer.Queue[cache.ObjectName] = (*clusterQueue)(nil)

func newClusterQueue(m *member, attempt int, token any, q informer.Queue[Key]) *clusterQueue {
	return &clusterQueue{m: m, q: q, token: token, attempt: attempt}
}

// Add implements informer.Queue.
func (c *clusterQueue) Add(name cache.ObjectName) { c.add(name, false) }

// AddLowPriority implements informer.Queue.
func (c *clusterQueue) AddLowPriority(name cache.ObjectName) { c.add(name, true) }

func (c *clusterQueue) add(name cache.ObjectName, low bool) {
	m := c.m
	m.mu.Lock()
	if !m.lockedReady() {
		m.keys.lockedHold(m.name, c.token, c.attempt, c.q, name, low)
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
	// q is the queue of the latest attempt that held a key, which the
	// keys are passed to.
	q       informer.Queue[Key]
	attempt int
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
func (k *keeper) lockedHold(cluster string, token any, attempt int, q informer.Queue[Key], name cache.ObjectName, low bool) bool {
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
		h = &heldKeys{token: token, q: q, attempt: attempt, pending: map[cache.ObjectName]bool{}}
		if k.held == nil {
			k.held = map[string][]*heldKeys{}
		}
		k.held[cluster] = append(k.held[cluster], h)
	}
	if attempt > h.attempt {
		h.q, h.attempt = q, attempt
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

// lockedPrune drops the keys held for the clusters whose keys are no
// longer held.
func (k *keeper) lockedPrune() {
	for cluster := range k.held {
		if !k.lockedHolds(cluster) {
			delete(k.held, cluster)
		}
	}
}
