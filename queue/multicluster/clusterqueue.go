package multicluster

import (
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

// clusterQueue is the queue of Cluster.Queue: it tags the keys of one
// cluster's handlers with the cluster's name, holds them until the
// cluster's caches have synced and drops them once it has left.
type clusterQueue struct {
	m *member
	q informer.Queue[Key]
	// pending holds the keys that came before the caches synced, true for
	// those added at least once with Add. Guarded by the Fleet's mu.
	pending map[cache.ObjectName]bool
	order   []cache.ObjectName
}

var _ informer.Queue[cache.ObjectName] = (*clusterQueue)(nil)

// Add implements informer.Queue.
func (c *clusterQueue) Add(name cache.ObjectName) { c.add(name, false) }

// AddLowPriority implements informer.Queue.
func (c *clusterQueue) AddLowPriority(name cache.ObjectName) { c.add(name, true) }

func (c *clusterQueue) add(name cache.ObjectName, low bool) {
	m := c.m
	m.mu.Lock()
	switch {
	case m.e.Final():
		m.mu.Unlock()
	case m.e.Phase() != engagement.Ready:
		fresh, held := c.pending[name]
		if !held {
			c.order = append(c.order, name)
		}
		c.pending[name] = fresh || !low
		m.mu.Unlock()
	default:
		m.mu.Unlock()
		key := Key{Cluster: m.name, ObjectName: name}
		if low {
			c.q.AddLowPriority(key)
		} else {
			c.q.Add(key)
		}
	}
}

// held takes the keys held so far out of the queue, once the member is
// ready: later keys pass straight through. The Fleet's mu is held.
func (c *clusterQueue) held() func() {
	pending, order := c.pending, c.order
	c.pending, c.order = nil, nil
	return func() {
		for _, name := range order {
			key := Key{Cluster: c.m.name, ObjectName: name}
			if pending[name] {
				c.q.Add(key)
			} else {
				c.q.AddLowPriority(key)
			}
		}
	}
}
