package queue

import (
	"context"
	"errors"
)

// Ownership limits a Controller to the keys its process owns, for an
// operator whose replicas share the keys (package queue/shard implements
// it on Leases). Given with WithOwnership, it changes three things: keys
// that are not owned are not queued (Add, AddLowPriority and AddAfter drop
// them); a waiting key that is no longer owned when its turn comes is
// dropped instead of reconciled; and every reconcile runs under a claim on
// its key, whose context the Ownership cancels when the key moves to
// another replica. A reconcile cancelled that way is neither retried nor
// counted as failed: the key is the new owner's.
//
// The Ownership is also a Source: it runs while the Controller runs and
// adds the keys that become owned.
type Ownership[K comparable] interface {
	Source[K]
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

// WithOwnership makes the controller reconcile only the keys o owns (see
// Ownership). Its key type must be the controller's.
func WithOwnership[K comparable](o Ownership[K]) Option {
	return func(c *config) {
		if o == nil {
			c.errs = append(c.errs, errors.New("ownership is nil"))
			return
		}
		c.ownership = o
	}
}
