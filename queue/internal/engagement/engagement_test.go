package engagement_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

var errLeft = errors.New("left")

// claimer owns the names in owned and counts the claims it holds on each;
// refuse makes it refuse new claims while still owning (as a shard.Gate
// whose view ran out does).
type claimer struct {
	owned   map[string]bool
	refuse  bool
	held    map[string]int
	cancels map[string][]context.CancelCauseFunc
}

var errMoved = errors.New("moved")

func newClaimer(owned ...string) *claimer {
	c := &claimer{owned: map[string]bool{}, held: map[string]int{}, cancels: map[string][]context.CancelCauseFunc{}}
	for _, n := range owned {
		c.owned[n] = true
	}
	return c
}

func (c *claimer) Owns(name string) bool { return c.owned[name] }

func (c *claimer) Claim(ctx context.Context, name string) (context.Context, func(), bool) {
	if !c.owned[name] || c.refuse {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	c.held[name]++
	c.cancels[name] = append(c.cancels[name], cancel)
	released := false
	return ctx, func() {
		if !released {
			released = true
			c.held[name]--
			cancel(context.Canceled)
		}
	}, true
}

// move takes name away: its claims' contexts are cancelled.
func (c *claimer) move(name string) {
	c.owned[name] = false
	for _, cancel := range c.cancels[name] {
		cancel(errMoved)
	}
}

func same(a, b string) bool { return a == b }

func names(es []*engagement.Engagement[string]) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestConvergeStartsOwnedNamesUnderAClaim(t *testing.T) {
	c := newClaimer("east", "west")
	s := engagement.New[string](c, same, errLeft)
	for _, n := range []string{"west", "north", "east"} {
		assert.True(t, s.Want(n, "v1"))
	}
	assert.False(t, s.Want("east", "v1"), "the same config again changes nothing")
	started, forgotten := s.Converge(context.Background())
	assert.Equal(t, []string{"east", "west"}, names(started), "in order of names; north is not owned")
	assert.Empty(t, forgotten)
	assert.Equal(t, map[string]int{"east": 1, "west": 1}, c.held)
	assert.Nil(t, s.Get("north"))
	assert.Equal(t, []string{"east", "north", "west"}, s.Wanted())

	started, _ = s.Converge(context.Background())
	assert.Empty(t, started, "one engagement per name")
	c.owned["north"] = true
	started, _ = s.Converge(context.Background())
	assert.Equal(t, []string{"north"}, names(started), "a name that becomes owned is engaged at the next converge")
	assert.Equal(t, "v1", started[0].Config())
	assert.Equal(t, engagement.Engaging, started[0].Phase())
}

func TestWithoutClaimerEveryWantedNameIsEngaged(t *testing.T) {
	s := engagement.New[string](nil, same, errLeft)
	s.Want("a", "v1")
	started, _ := s.Converge(context.Background())
	require.Len(t, started, 1)
	e := started[0]
	require.True(t, e.Ready())
	ctx, release, ok := e.Claim(context.Background())
	require.True(t, ok)
	drained, final := e.Drain()
	assert.False(t, final)
	assert.ErrorIs(t, context.Cause(ctx), errLeft)
	release()
	<-drained
	e.End()
	assert.Equal(t, []string{"a"}, s.Forget())
}

func TestConvergeEndsWhatIsNoLongerWantedOwnedOrCurrent(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *engagement.Set[string], c *claimer)
		cause  error
		// departed: the name left (its results go), even when it is
		// wanted again before the engagement ended.
		departed bool
	}{
		{"no longer wanted", func(s *engagement.Set[string], _ *claimer) { s.Unwant("east") }, errLeft, true},
		{"another config", func(s *engagement.Set[string], _ *claimer) { s.Want("east", "v2") }, errLeft, false},
		{"moved", func(_ *engagement.Set[string], c *claimer) { c.move("east") }, errMoved, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClaimer("east")
			s := engagement.New[string](c, same, errLeft)
			s.Want("east", "v1")
			started, _ := s.Converge(context.Background())
			require.Len(t, started, 1)
			e := started[0]
			require.True(t, e.Ready())
			assert.False(t, e.Leaving())
			work, release, ok := e.Claim(context.Background())
			require.True(t, ok)
			tt.change(s, c)
			again, _ := s.Converge(context.Background())
			assert.Empty(t, again, "no second engagement while the first has not ended")
			assert.True(t, e.Leaving())
			assert.Equal(t, tt.departed, e.Departed())
			assert.ErrorIs(t, context.Cause(e.Context()), tt.cause)
			assert.Error(t, work.Err(), "the work in it is cancelled at once")
			assert.Same(t, e, s.Get("east"))
			_, _, ok = e.Claim(context.Background())
			assert.False(t, ok, "no new work once told to end, even before it drains")
			release()

			drained, final := e.Drain()
			assert.True(t, final)
			<-drained
			assert.False(t, e.Ready(), "an engagement whose context ended is not made ready")
			e.End()
			assert.Equal(t, 0, c.held["east"], "the claim is released once it ended")
			next, forgotten := s.Converge(context.Background())
			assert.Equal(t, []string{"east"}, forgotten)
			if tt.name == "another config" {
				require.Len(t, next, 1, "the new config is engaged once the old engagement is forgotten")
				assert.Equal(t, "v2", next[0].Config())
			} else {
				assert.Empty(t, next)
			}
		})
	}
}

func TestDepartedWhenWantedAgainBeforeItEnded(t *testing.T) {
	s := engagement.New[string](nil, same, errLeft)
	s.Want("east", "v1")
	started, _ := s.Converge(context.Background())
	require.Len(t, started, 1)
	e := started[0]
	s.Unwant("east")
	s.LeaveUnwanted()
	s.Want("east", "v1") // reported again before it ended
	s.LeaveUnwanted()
	assert.True(t, e.Leaving())
	assert.True(t, e.Departed(), "it left all the same")
}

func TestSubClaims(t *testing.T) {
	c := newClaimer("east")
	s := engagement.New[string](c, same, errLeft)
	s.Want("east", "v1")
	started, _ := s.Converge(context.Background())
	e := started[0]

	_, _, ok := e.Claim(context.Background())
	assert.False(t, ok, "no work before the engagement is ready")
	require.True(t, e.Ready())
	assert.False(t, e.Ready(), "ready once")

	ctx1, release1, ok := e.Claim(context.Background())
	require.True(t, ok)
	ctx2, release2, ok := e.Claim(context.Background())
	require.True(t, ok)
	assert.Equal(t, 3, c.held["east"], "each piece of work holds a claim on the name too")

	c.refuse = true
	_, _, ok = e.Claim(context.Background())
	assert.False(t, ok, "no work when the Claimer refuses a claim on the name (a view that ran out)")
	c.refuse = false

	drained, final := e.Drain()
	assert.False(t, final, "a drain while the engagement's context lives is not final")
	assert.ErrorIs(t, context.Cause(ctx1), errLeft)
	assert.ErrorIs(t, context.Cause(ctx2), errLeft)
	_, _, ok = e.Claim(context.Background())
	assert.False(t, ok, "no work while drained")
	release1()
	release1() // a second call changes nothing
	select {
	case <-drained:
		t.Fatal("drained before the last sub-claim was released")
	default:
	}
	again, _ := e.Drain()
	release2()
	<-drained
	<-again
	assert.Equal(t, 1, c.held["east"], "only the engagement's claim is left")

	require.True(t, e.Ready(), "ready again after a drain that was not final")
	_, release3, ok := e.Claim(context.Background())
	require.True(t, ok)
	c.move("east")
	assert.True(t, e.Leaving())
	e.End() // without a drain: the claim waits for the work
	assert.True(t, e.Final())
	assert.Equal(t, 2, c.held["east"], "the claim on the name outlives the engagement's last work")
	release3()
	assert.Equal(t, 0, c.held["east"])
	e.End()
	assert.Equal(t, engagement.Ended, e.Phase())
}

func TestCancelAll(t *testing.T) {
	s := engagement.New[string](nil, same, errLeft)
	s.Want("b", "v1")
	s.Want("a", "v1")
	s.Converge(context.Background())
	all := s.CancelAll()
	assert.Equal(t, []string{"a", "b"}, names(all))
	for _, e := range all {
		assert.ErrorIs(t, context.Cause(e.Context()), errLeft)
		_, final := e.Drain()
		assert.True(t, final)
		e.End()
	}
	assert.Equal(t, []string{"a", "b"}, s.Forget())
	assert.Empty(t, s.Forget())
}

// A quiesced engagement grants no more work and is never ready again, but
// lets the work in flight finish: nothing is cancelled until it is told
// to leave.
func TestQuiesce(t *testing.T) {
	c := newClaimer("east")
	s := engagement.New[string](c, same, errLeft)
	s.Want("east", "v1")
	started, _ := s.Converge(context.Background())
	e := started[0]
	require.True(t, e.Ready())
	work, release, ok := e.Claim(context.Background())
	require.True(t, ok)

	quiesced := e.Quiesce()
	assert.Equal(t, engagement.Ready, e.Phase(), "still ready while its work finishes")
	assert.NoError(t, work.Err(), "the work in flight is not cancelled")
	assert.NoError(t, e.Context().Err())
	_, _, ok = e.Claim(context.Background())
	assert.False(t, ok, "no new work once quiesced")
	select {
	case <-quiesced:
		t.Fatal("quiesced before the work in flight was released")
	default:
	}
	release()
	<-quiesced
	_, final := e.Drain()
	assert.False(t, final)
	assert.False(t, e.Ready(), "never ready again once quiesced")

	e.Leave()
	assert.True(t, e.Leaving())
	assert.ErrorIs(t, context.Cause(e.Context()), errLeft)
	drained, final := e.Drain()
	<-drained
	assert.True(t, final)
	e.End()
	assert.Equal(t, 0, c.held["east"])
	<-e.Quiesce() // at once without work
}

// LeaveUnwanted tells the engagements of names no longer wanted, wanted
// with another config or no longer owned to leave, cancelling their
// sub-claims, and starts nothing: as while the owner stops.
func TestLeaveUnwanted(t *testing.T) {
	c := newClaimer("kept", "deleted", "changed", "moved")
	s := engagement.New[string](c, same, errLeft)
	for _, n := range []string{"kept", "deleted", "changed", "moved"} {
		s.Want(n, "v1")
	}
	started, _ := s.Converge(context.Background())
	require.Len(t, started, 4)
	subs := map[string]context.Context{}
	for _, e := range started {
		require.True(t, e.Ready())
		ctx, _, ok := e.Claim(context.Background())
		require.True(t, ok)
		subs[e.Name()] = ctx
	}
	s.Unwant("deleted")
	s.Want("changed", "v2")
	c.owned["moved"] = false
	s.Want("new", "v1")
	c.owned["new"] = true

	s.LeaveUnwanted()
	for _, e := range started {
		leaves := e.Name() != "kept"
		assert.Equal(t, leaves, e.Leaving(), "engagement %s leaving", e.Name())
		if leaves {
			assert.ErrorIs(t, context.Cause(subs[e.Name()]), errLeft, "sub-claim of %s", e.Name())
		} else {
			assert.NoError(t, subs[e.Name()].Err(), "sub-claim of %s", e.Name())
		}
	}
	assert.Nil(t, s.Get("new"), "nothing is started")
}
