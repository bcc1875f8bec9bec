package queue

import (
	"context"
	"fmt"
)

// Ownership limits a Controller to the keys its process owns, for an
// operator whose replicas share the keys (package queue/shard implements
// it on Leases). Given to Restrict, it changes three things: keys that are
// not owned are not queued (Add, AddLowPriority and AddAfter drop them); a
// waiting key that is no longer owned when its turn comes is dropped
// instead of reconciled; and every reconcile runs under a claim on its key,
// whose context the Ownership cancels when the key moves to another
// replica. A reconcile cancelled that way is neither retried nor counted as
// failed: the key is the new owner's.
type Ownership[K comparable] interface {
	// Start runs while the Controller runs, until ctx is cancelled, and
	// adds to q the keys that become owned; Run waits for it to return.
	Start(ctx context.Context, q Enqueuer[K])
	// Owns reports whether this process may reconcile key now.
	Owns(key K) bool
	// Claim is called before key is reconciled. If the key is owned, it
	// returns a context derived from ctx that is cancelled when the key
	// stops being owned, and release, which the Controller calls once the
	// reconcile has returned; the ownership does not move while a claim
	// is held, except by cancelling it first. Otherwise ok is false and
	// the key is dropped.
	Claim(ctx context.Context, key K) (claimCtx context.Context, release func(), ok bool)
}

// Restrict makes the controller reconcile only the keys o owns (see
// Ownership). It must be called before Run, at most once; keys added before
// it are dropped when their turn comes if o does not own them.
func (c *Controller[K]) Restrict(o Ownership[K]) error {
	if o == nil {
		return fmt.Errorf("queue: controller %q: Restrict needs an Ownership", c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.started:
		return fmt.Errorf("queue: controller %q: Restrict called after Run", c.name)
	case c.ownership.Load() != nil:
		return fmt.Errorf("queue: controller %q: Restrict called twice", c.name)
	}
	c.ownership.Store(&o)
	return nil
}

// owner returns the controller's Ownership, nil if every key is this
// process's.
func (c *Controller[K]) owner() Ownership[K] {
	if o := c.ownership.Load(); o != nil {
		return *o
	}
	return nil
}
