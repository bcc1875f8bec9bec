package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Gate is a source of a Controller's keys whose informers come and go
// while the controller runs, such as the informer of an API that is
// installed and removed meanwhile (package informer/optional builds them).
// Given to Controller.Watch through Gated, it is an Ownership of some keys
// (the keys that need what the gate follows) that combines with the
// Ownership of Restrict and with the other gates: a key runs only when all
// of them own it, under a claim of each. A reconcile whose claim a gate
// cancels is neither retried nor counted as failed, and a waiting key a
// gate no longer owns is dropped when its turn comes.
type Gate[K comparable] interface {
	Ownership[K]
	// HasSynced reports whether what the gate follows has delivered what
	// it serves now: the controller's workers start, and its HasSynced
	// reports true, only once every gate's HasSynced does. A gate whose
	// informers are not running reports true once it knows they should
	// not run. A Gate with a method Starting() has it called by Run just
	// before its Start, so that its HasSynced can tell a controller that
	// has not started (before Run, a standby replica's readiness) from one
	// whose Start has not registered its handlers yet.
	HasSynced() bool
}

// gateStarter is a Gate that Run tells, just before it calls the gate's
// Start, that the controller is starting: from then on the gate's
// HasSynced must report on what the controller's workers wait for, while
// before it (a standby replica) it may report on its informers alone, as
// Controller.HasSynced does for a watched informer.
type gateStarter interface {
	Starting()
}

// Gated returns a Watch that runs g while the controller runs (its Start,
// which adds the keys that become owned), takes its HasSynced into the
// controller's, and restricts the controller's keys to those g owns (see
// Gate). Controller.Watch refuses a nil gate, a gate whose key type is
// not the controller's, and a gate with an Err method that returns an
// error (a gate that was built wrong), with that error.
func Gated[K comparable](g Gate[K]) Watch {
	if g == nil {
		return Watch{err: errors.New("gate must not be nil")}
	}
	if e, ok := g.(interface{ Err() error }); ok && e.Err() != nil {
		return Watch{err: e.Err()}
	}
	return Watch{gate: g}
}

// lockedAddGate adds the gate of w, checked by checkGate, to c's gates.
// The caller holds c.mu.
func (c *Controller[K]) lockedAddGate(w Watch) {
	gates := append(slices.Clone(c.loadGates()), w.gate.(Gate[K]))
	c.gates.Store(&gates)
}

// checkGate reports why the gate of w cannot gate c's keys.
func (c *Controller[K]) checkGate(w Watch) error {
	if _, ok := w.gate.(Gate[K]); !ok {
		var key K
		return fmt.Errorf("gate %T does not gate keys of type %T", w.gate, key)
	}
	return nil
}

// loadGates returns the gates given to Watch.
func (c *Controller[K]) loadGates() []Gate[K] {
	if g := c.gates.Load(); g != nil {
		return *g
	}
	return nil
}

// claimGates claims key from every gate, returning the context of the
// last claim and a release of all; ok is false (and nothing is held) if a
// gate does not own key.
func (c *Controller[K]) claimGates(ctx context.Context, key K) (context.Context, func(), bool) {
	gates := c.loadGates()
	if len(gates) == 0 {
		return ctx, func() {}, true
	}
	releases := make([]func(), 0, len(gates))
	releaseAll := func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	for _, g := range gates {
		claimCtx, release, ok := g.Claim(ctx, key)
		if !ok {
			releaseAll()
			return nil, nil, false
		}
		releases = append(releases, release)
		ctx = claimCtx
	}
	return ctx, releaseAll, true
}
