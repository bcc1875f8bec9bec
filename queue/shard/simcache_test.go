package shard

import (
	"slices"
	"time"
)

// The simulation's objects: every key has one object on the simulated API
// server, whose version a reconcile may raise (a write). Every process has
// a sharded cache of them (simCache), fed by a watch of the writes with
// the scheduler's delays and by the relists its Membership asks for, with
// the filtering of shardedCache: only the keys its view wants, or a claim
// of its Gate still holds, are held. As shardedCache does, it reports a
// relist to its Membership once the relist is in its store (not when its
// store reaches some version), and drops the objects of keys it no longer
// wants when its Membership says so, after their claims are released.
// A claim of a key that another process wrote last must find the cache at
// that write's version or later, and the object of a key must not leave
// the cache while the process reconciles the key.

// simObjEvent is a write as one process's object watch delivers it.
type simObjEvent struct {
	seq, version uint64
	key          string
	ready        time.Duration
}

// simCache models the sharded informer of one process.
type simCache struct {
	p       *simProc
	objects map[string]uint64
	events  []simObjEvent
	// replacing: a relist was served and has not reached the store; the
	// watch after it delivers nothing before it does.
	replacing         bool
	listing           bool
	requested, listed uint64
}

var _ shardCache = (*simCache)(nil)

func newSimCache(p *simProc) *simCache { return &simCache{p: p, objects: map[string]uint64{}} }

func (c *simCache) refresh(epoch uint64) {
	c.requested = max(c.requested, epoch)
	c.startList()
}

func (c *simCache) keep(v *view) {
	for _, k := range sortedKeys(c.objects) {
		if !c.keeps(v, k) {
			c.drop(k, "dropped")
		}
	}
}

// keeps reports whether the cache keeps key's object under v.
func (c *simCache) keeps(v *view, key string) bool {
	h := hashKey(key)
	return v.wants(h) || c.p.m.claimed(h)
}

// drop removes key's object from the cache.
func (c *simCache) drop(key, how string) {
	if _, ok := c.objects[key]; !ok {
		return
	}
	if c.p.active[key] != nil {
		c.p.s.fail("%s's cache %s the object of %s while %s reconciled it", c.p.identity, how, key, c.p.identity)
	}
	delete(c.objects, key)
}

// startList relists unless a relist runs or none is asked for: the
// reflector's backoff and the request's latency pass, the server answers
// with the objects the view then wants, and the answer reaches the store
// after a delay; the watch resumes after the list.
func (c *simCache) startList() {
	if c.listing || c.requested <= c.listed {
		return
	}
	c.listing = true
	epoch := c.requested
	p, s := c.p, c.p.s
	s.after(s.dur(0, time.Second)+s.dur(time.Millisecond, s.maxLatency+time.Millisecond), p, "relist served", func() {
		s.stats.relists++
		v := p.m.view.Load()
		snap := map[string]uint64{}
		for _, k := range sortedKeys(s.objects) {
			if c.keeps(v, k) {
				snap[k] = s.objects[k]
			}
		}
		from := s.objSeq
		c.replacing = true
		s.after(s.dur(0, s.maxWatchDelay), p, "relist applied", func() {
			for _, k := range sortedKeys(c.objects) {
				if _, ok := snap[k]; !ok {
					c.drop(k, "relisted without")
				}
			}
			c.objects, c.replacing, c.listing, c.listed = snap, false, false, epoch
			c.events = slices.DeleteFunc(c.events, func(e simObjEvent) bool { return e.seq <= from })
			p.m.refreshed(c, epoch)
			p.drainGate()
			if len(c.events) > 0 {
				c.schedule()
			}
			c.startList()
		})
	})
}

// push queues a write behind the watch's earlier deliveries.
func (c *simCache) push(e simObjEvent) {
	if n := len(c.events); n > 0 {
		e.ready = max(e.ready, c.events[n-1].ready)
	}
	c.events = append(c.events, e)
	if len(c.events) == 1 {
		c.schedule()
	}
}

func (c *simCache) schedule() {
	p := c.p
	p.s.at(max(c.events[0].ready, p.watcher.stalledUntil), p, "", c.pump)
}

// pump delivers the next write, filtered as shardedCache filters.
func (c *simCache) pump() {
	p := c.p
	if len(c.events) == 0 || c.replacing {
		return // the relist's arrival resumes the watch
	}
	if p.watcher.stalledUntil > p.s.now {
		c.schedule()
		return
	}
	e := c.events[0]
	c.events = c.events[1:]
	if c.keeps(p.m.view.Load(), e.key) {
		c.objects[e.key] = max(c.objects[e.key], e.version)
	} else {
		c.drop(e.key, "filtered out")
	}
	if len(c.events) > 0 {
		c.schedule()
	}
}

// write raises key's version on the server, for p, and sends the write to
// every process's object watch.
func (s *sim) write(p *simProc, key string) {
	s.stats.writes++
	s.objects[key]++
	s.objSeq++
	s.lastWriter[key] = p
	for _, q := range s.procs {
		if !q.dead {
			q.cache.push(simObjEvent{seq: s.objSeq, version: s.objects[key], key: key, ready: s.now + s.dur(0, s.maxWatchDelay)})
		}
	}
}

// checkFresh fails the run if p claims key with a cache older than the
// last write of another process.
func (s *sim) checkFresh(p *simProc, key string) {
	if w := s.lastWriter[key]; w != nil && w != p && p.cache.objects[key] < s.objects[key] {
		s.fail("%s claimed %s with its cache at version %d, before the last write (%d) of %s",
			p.identity, key, p.cache.objects[key], s.objects[key], w.identity)
	}
}

// checkGain fails the run if the view p applies owns a key its view
// before did not while mayGain says it cannot.
func (s *sim) checkGain(p *simProc, from, v *view) {
	if mayGain(from, v) {
		return
	}
	for _, k := range s.keys {
		if h := hashKey(k); v.ownsByLists(h) && !from.ownsByLists(h) {
			s.fail("%s gains %s from view %q to %q, which mayGain denies", p.identity, k, from.id(), v.id())
			return
		}
	}
}
