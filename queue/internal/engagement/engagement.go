// Package engagement keeps the long-lived engagements of named things,
// the member clusters of a multicluster.Fleet, one replica at a time.
//
// An engagement of a name runs under a claim on the name (from a
// shard.Gate when the names are shared among replicas), and the work done
// in it, one reconcile each, under sub-claims that the engagement grants
// only while it is ready and, with a Claimer, only while the Claimer
// grants a claim on the name for the work too. Its claim on the name is
// released only once it has ended and every sub-claim has been released,
// so no two replicas ever work in one name at the same time.
//
// A Set is a state machine that starts no goroutine and reads no clock:
// its owner runs each engagement's attempts and probes on goroutines of
// its own and calls the Set under one lock, and the simulation of package
// queue/shard drives the same code from its events.
//
//	set := engagement.New[string](gate, func(a, b string) bool { return a == b }, errLeft)
//	set.Want("east", "config-1")
//	started, _ := set.Converge(ctx)
//	for _, e := range started {
//		if e.Ready() { // engaged: its informers synced
//			work, release, ok := e.Claim(ctx)
//			if ok {
//				reconcile(work, e.Name())
//				release()
//			}
//		}
//		drained, final := e.Drain() // stopping: it stopped answering, or e.Context() ended
//		<-drained
//		if final {
//			e.End()
//		}
//	}
//
// An owner that stops and lets the work in flight finish first quiesces
// its ready engagements (Quiesce: no new sub-claims, none cancelled),
// waits for them to drain, and then ends them as usual (Leave, Drain,
// End).
package engagement

import (
	"context"
	"maps"
	"slices"
)

// Claimer grants claims on names, as a shard.Gate[string] does: a claim
// is granted only while this replica owns the name, its context is
// cancelled when the name moves away, and the name is not given to
// another replica before release is called.
type Claimer interface {
	Claim(ctx context.Context, name string) (claimCtx context.Context, release func(), ok bool)
	Owns(name string) bool
}

// Set holds at most one engagement per wanted name, each under a claim on
// its name from the Claimer (every wanted name, without one). A Set and
// its engagements are not safe for concurrent use: the owner makes every
// call, including those of the release functions Claim returns, under
// one lock of its own.
type Set[C any] struct {
	claimer Claimer
	same    func(a, b C) bool
	cause   error
	wanted  map[string]C
	held    map[string]*Engagement[C]
}

// New returns a Set whose engagements claim their names from claimer (nil:
// every name is this replica's). same tells whether two configs of a name
// are the same: a name wanted with another config ends its engagement,
// and a new one starts with the new config. Contexts that a Set cancels
// are cancelled with cause.
func New[C any](claimer Claimer, same func(a, b C) bool, cause error) *Set[C] {
	return &Set[C]{claimer: claimer, same: same, cause: cause, wanted: map[string]C{}, held: map[string]*Engagement[C]{}}
}

// Want makes name wanted with cfg, and reports whether that changed what
// is wanted (a new name, or another config).
func (s *Set[C]) Want(name string, cfg C) bool {
	if old, ok := s.wanted[name]; ok && s.same(old, cfg) {
		return false
	}
	s.wanted[name] = cfg
	return true
}

// Unwant makes name no longer wanted.
func (s *Set[C]) Unwant(name string) { delete(s.wanted, name) }

// Wanted returns the wanted names, sorted.
func (s *Set[C]) Wanted() []string { return slices.Sorted(maps.Keys(s.wanted)) }

// IsWanted reports whether name is wanted.
func (s *Set[C]) IsWanted(name string) bool {
	_, ok := s.wanted[name]
	return ok
}

// Get returns the engagement of name this Set holds, nil if none.
func (s *Set[C]) Get(name string) *Engagement[C] { return s.held[name] }

// Converge cancels the context of every engagement whose name is no
// longer wanted, is wanted with another config, or is no longer owned,
// and those of its sub-claims;
// forgets the engagements that have ended (their names are returned, in
// order); and starts an engagement of each wanted name that has none,
// under a claim on the name, which the Claimer may refuse for now (the
// engagements started are returned, in the order of their names). ctx is
// the parent of the engagements' contexts.
func (s *Set[C]) Converge(ctx context.Context) (started []*Engagement[C], forgotten []string) {
	s.LeaveUnwanted()
	forgotten = s.Forget()
	for _, name := range slices.Sorted(maps.Keys(s.wanted)) {
		if _, held := s.held[name]; held {
			continue
		}
		claimed, release := ctx, func() {}
		if s.claimer != nil {
			var ok bool
			if claimed, release, ok = s.claimer.Claim(ctx, name); !ok {
				continue
			}
		}
		ectx, cancel := context.WithCancelCause(claimed)
		e := &Engagement[C]{name: name, config: s.wanted[name], set: s, ctx: ectx, cancel: cancel, release: release, subs: map[*sub]struct{}{}}
		s.held[name] = e
		started = append(started, e)
	}
	return started, forgotten
}

// LeaveUnwanted cancels the context of every engagement whose name is no
// longer wanted, is wanted with another config, or is no longer owned,
// and those of its sub-claims, as Converge does, without starting any
// engagement: as while the owner stops.
func (s *Set[C]) LeaveUnwanted() {
	for _, name := range slices.Sorted(maps.Keys(s.held)) {
		e := s.held[name]
		cfg, wanted := s.wanted[name]
		owned := s.claimer == nil || s.claimer.Owns(name)
		if !wanted || !owned {
			e.departed = true
		}
		if !wanted || !s.same(cfg, e.config) || !owned {
			e.leave()
		}
	}
}

// Forget forgets the engagements that have ended and returns their names,
// sorted.
func (s *Set[C]) Forget() (forgotten []string) {
	for _, name := range slices.Sorted(maps.Keys(s.held)) {
		if s.held[name].phase == Ended {
			delete(s.held, name)
			forgotten = append(forgotten, name)
		}
	}
	return forgotten
}

// CancelAll cancels the context of every engagement held, as when the
// owner stops, and returns them in the order of their names.
func (s *Set[C]) CancelAll() []*Engagement[C] {
	var all []*Engagement[C]
	for _, name := range slices.Sorted(maps.Keys(s.held)) {
		e := s.held[name]
		e.leave()
		all = append(all, e)
	}
	return all
}

// Phase is where an engagement is.
type Phase int

const (
	// Engaging: started and not ready, or no longer ready (drained and
	// waiting to be engaged again, or to end). Claim grants nothing.
	Engaging Phase = iota
	// Ready: Claim grants sub-claims.
	Ready
	// Ended: over; the next Converge or Forget forgets it.
	Ended
)

// Engagement is the engagement of one name.
type Engagement[C any] struct {
	name    string
	config  C
	set     *Set[C]
	ctx     context.Context
	cancel  context.CancelCauseFunc
	release func() // the claim on the name; nil once released
	phase   Phase
	leaving bool
	// departed: told to leave because its name was no longer wanted or
	// owned (not for a new config, nor the owner's stop).
	departed bool
	final    bool
	closed   bool // Quiesce: no new sub-claim
	subs     map[*sub]struct{}
	drained  chan struct{} // closed when the last sub-claim is released
}

type sub struct{ cancel context.CancelCauseFunc }

// Name returns the engagement's name.
func (e *Engagement[C]) Name() string { return e.name }

// Config returns the config the engagement started with.
func (e *Engagement[C]) Config() C { return e.config }

// Context returns the engagement's context, which ends when the engagement
// must end: its name is no longer wanted or owned, its config changed, or
// the owner stops. It ends with the Set's cause, or with the Claimer's
// when the name moved.
func (e *Engagement[C]) Context() context.Context { return e.ctx }

// Phase returns where the engagement is.
func (e *Engagement[C]) Phase() Phase { return e.phase }

// Leaving reports whether the engagement was told to end: by Converge,
// CancelAll, Leave, or a claim that moved.
func (e *Engagement[C]) Leaving() bool { return e.leaving || e.ctx.Err() != nil }

// Departed reports whether e was told to leave because its name was no
// longer wanted or no longer owned at some point, even if it is wanted
// and owned again since: the name left, rather than getting a new config
// or stopping with the owner.
func (e *Engagement[C]) Departed() bool { return e.departed }

// Final reports whether the engagement has drained for the last time: it
// is ending, and takes no more work.
func (e *Engagement[C]) Final() bool { return e.final || e.phase == Ended }

// Ready makes the engagement ready, so that Claim grants sub-claims; it
// reports false, and changes nothing, if the engagement's context has
// ended (it must then be drained and ended) or it is not engaging.
func (e *Engagement[C]) Ready() bool {
	if e.phase != Engaging || e.final || e.closed || e.ctx.Err() != nil {
		return false
	}
	e.phase = Ready
	return true
}

// Claim grants a sub-claim for one piece of work in the engagement while
// it is ready, not quiesced and its context has not ended and, with a Claimer, only if
// the Claimer grants a claim on the name for as long as the sub-claim
// lasts: work never starts under a claim on the name that may have run
// out (after a pause, say). claimCtx is cancelled when the engagement is
// told to end or drains, or the name moves; release must be called once
// the work is over.
func (e *Engagement[C]) Claim(ctx context.Context) (claimCtx context.Context, release func(), ok bool) {
	if e.closed { // quiesced
		return nil, nil, false
	}
	if e.phase != Ready || e.ctx.Err() != nil {
		return nil, nil, false
	}
	parent, releaseName := ctx, func() {}
	if c := e.set.claimer; c != nil {
		if parent, releaseName, ok = c.Claim(ctx, e.name); !ok {
			return nil, nil, false
		}
	}
	claimCtx, cancel := context.WithCancelCause(parent)
	s := &sub{cancel: cancel}
	e.subs[s] = struct{}{}
	released := false
	return claimCtx, func() {
		if released {
			return
		}
		released = true
		delete(e.subs, s)
		cancel(context.Canceled)
		releaseName()
		if len(e.subs) == 0 {
			e.idle()
		}
	}, true
}

// Drain makes the engagement not ready and cancels its sub-claims; drained
// is closed once all of them have been released. final is true if the
// engagement's context has ended: it must then be ended (End) once drained
// and once what it ran has stopped; otherwise it may be made ready again.
func (e *Engagement[C]) Drain() (drained <-chan struct{}, final bool) {
	if e.phase == Ready {
		e.phase = Engaging
	}
	if e.ctx.Err() != nil {
		e.final = true
	}
	for s := range e.subs {
		s.cancel(e.set.cause)
	}
	return e.whenDrained(), e.final
}

// Quiesce makes the engagement grant no more sub-claims and never be
// ready again, without cancelling the sub-claims it granted: as when its
// owner stops and lets the work in flight finish. drained is closed once
// all of them have been released. The engagement is then ended as any
// other: Leave, Drain, End. Its phase does not change, so a ready
// engagement still reports Ready while its work finishes.
func (e *Engagement[C]) Quiesce() (drained <-chan struct{}) {
	e.closed = true
	return e.whenDrained()
}

// whenDrained returns a channel closed once no sub-claim is held.
func (e *Engagement[C]) whenDrained() <-chan struct{} {
	if len(e.subs) == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if e.drained == nil {
		e.drained = make(chan struct{})
	}
	return e.drained
}

// Leave tells the engagement to end, as Converge does for a name no
// longer wanted: its context and those of its sub-claims are cancelled
// with the Set's cause.
func (e *Engagement[C]) Leave() { e.leave() }

// End ends the engagement: its context is cancelled, its claim on the
// name is released once its last sub-claim is (at once when it was
// drained), and the next Converge or Forget forgets it.
func (e *Engagement[C]) End() {
	if e.phase == Ended {
		return
	}
	e.phase, e.final = Ended, true
	e.cancel(e.set.cause)
	for s := range e.subs {
		s.cancel(e.set.cause)
	}
	if len(e.subs) == 0 {
		e.idle()
	}
}

// leave tells the engagement to end: its context and those of its
// sub-claims are cancelled.
func (e *Engagement[C]) leave() {
	e.leaving = true
	e.cancel(e.set.cause)
	for s := range e.subs {
		s.cancel(e.set.cause)
	}
}

// idle is called when the last sub-claim is released, or at End without
// any.
func (e *Engagement[C]) idle() {
	if e.drained != nil {
		close(e.drained)
		e.drained = nil
	}
	if e.phase == Ended && e.release != nil {
		e.release()
		e.release = nil
	}
}
