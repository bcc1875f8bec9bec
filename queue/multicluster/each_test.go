package multicluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// outageProbeInterval is the probe interval of the tests in which one
// member stops answering while the others must stay ready throughout: a
// member is engaged again (not ready meanwhile) only after three probes in
// a row each went unanswered for the interval, which a member answering at
// once does only if the test process stalls for three intervals, while
// the member that stops answering fails its probes at once and is found
// within three intervals.
const outageProbeInterval = 500 * time.Millisecond

// Each walks the members held, ready or not: a member that is not ready
// is reported without calling fn, one that hangs is cut off by the
// timeout, one that panics is reported, and none holds up the others.
func TestEach(t *testing.T) {
	c := newClusters("ok", "fails", "hangs", "panics", "down")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(outageProbeInterval), multicluster.WithSyncTimeout(200*time.Millisecond))
	for _, name := range []string{"ok", "fails", "hangs", "panics", "down"} {
		f.members.Set(name, c.config(name))
	}
	f.members.Synced()
	for _, name := range []string{"ok", "fails", "hangs", "panics", "down"} {
		f.ready(t, name)
	}
	c.down["down"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("down"); return !st.Ready && st.Err != nil }, waitFor, time.Millisecond)

	errFailed := errors.New("failed")
	var calls atomic.Int32
	const timeout = 50 * time.Millisecond
	errs := f.fleet.Each(context.Background(), timeout, func(ctx context.Context, cluster string, m *member) error {
		calls.Add(1)
		if m == nil || m.name != cluster {
			return errors.New("not the member's value")
		}
		switch cluster {
		case "fails":
			return errFailed
		case "hangs":
			<-ctx.Done()
			return context.Cause(ctx)
		case "panics":
			panic("boom")
		}
		return nil
	})
	assert.Equal(t, int32(4), calls.Load(), "fn is called for the ready members only")
	require.Len(t, errs, 5)
	tests := []struct {
		cluster string
		check   func(t *testing.T, err error)
	}{
		{"ok", func(t *testing.T, err error) { assert.NoError(t, err) }},
		{"fails", func(t *testing.T, err error) { assert.ErrorIs(t, err, errFailed) }},
		{"hangs", func(t *testing.T, err error) { assert.ErrorContains(t, err, `cluster "hangs": no answer within 50ms`) }},
		{"panics", func(t *testing.T, err error) { assert.ErrorContains(t, err, "panic: boom") }},
		{"down", func(t *testing.T, err error) {
			assert.ErrorIs(t, err, multicluster.ErrNotReady)
			assert.ErrorIs(t, err, errDown)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.cluster, func(t *testing.T) { tt.check(t, errs[tt.cluster]) })
	}
}

// A member that leaves while Each calls fn for it cancels fn's context
// with ErrLeft, and does not finish leaving before fn returns.
func TestEachMemberLeaves(t *testing.T) {
	c := newClusters("a")
	f := startFleet(t, c, newRecorder().copyCluster)
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	started := make(chan struct{})
	var stillHeld atomic.Bool
	done := make(chan map[string]error, 1)
	go func() {
		done <- f.fleet.Each(context.Background(), 0, func(ctx context.Context, cluster string, _ *member) error {
			close(started)
			<-ctx.Done()
			_, held := f.fleet.Status(cluster)
			stillHeld.Store(held)
			return context.Cause(ctx)
		})
	}()
	<-started
	f.members.Delete("a")
	var errs map[string]error
	select {
	case errs = <-done:
	case <-time.After(waitFor):
		t.Fatal("Each did not return")
	}
	assert.ErrorIs(t, errs["a"], multicluster.ErrLeft)
	assert.True(t, stillHeld.Load(), "the member was held until fn returned")
}

// A member its Provider still reports is never left out of Each while it
// is not ready: not while its old engagement drains after its credentials
// changed, not while the Fleet stops (a ready member drains, another has
// left already), not after it stopped. A cleanup that reads "no entry"
// as "no longer a member" would give up on it.
func TestEachReportsMembersStillWantedAsNotReady(t *testing.T) {
	c := newClusters("a", "b")
	f := startFleet(t, c, newRecorder().copyCluster)
	for _, name := range []string{"a", "b"} {
		f.members.Set(name, c.config(name))
	}
	f.members.Synced()
	f.ready(t, "a")
	f.ready(t, "b")
	// hold keeps a held by an Each call until release is closed. A call
	// that finds a not ready (a probe missed on a loaded machine) is
	// made again, until waitFor has passed.
	hold := func() (release chan struct{}, done chan struct{}) {
		release = make(chan struct{})
		deadline := time.Now().Add(waitFor)
		for {
			started, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				f.fleet.Each(context.Background(), 0, func(_ context.Context, cluster string, _ *member) error {
					if cluster == "a" {
						close(started)
						<-release
					}
					return nil
				})
			}()
			select {
			case <-started:
				return release, done
			case <-done:
				require.True(t, time.Now().Before(deadline), "no Each call reached a within %v", waitFor)
			}
		}
	}
	notReady := func(t *testing.T, names ...string) {
		t.Helper()
		errs := f.fleet.Each(context.Background(), 0, func(context.Context, string, *member) error { return nil })
		require.Len(t, errs, len(names), "%v", errs)
		for _, name := range names {
			assert.ErrorIs(t, errs[name], multicluster.ErrNotReady, name)
		}
	}

	// a's credentials change while a call holds it: its old engagement
	// drains, out of Clusters, still a member.
	release, done := hold()
	cfg := c.config("a")
	cfg.BearerToken = "rotated"
	f.members.Set("a", cfg)
	require.Eventually(t, func() bool { return !slices.Contains(f.fleet.Clusters(), "a") }, waitFor, time.Millisecond)
	errs := f.fleet.Each(context.Background(), 0, func(context.Context, string, *member) error { return nil })
	require.Len(t, errs, 2)
	assert.ErrorIs(t, errs["a"], multicluster.ErrNotReady)
	assert.NoError(t, errs["b"])
	close(release)
	<-done
	f.ready(t, "a")

	// The Fleet stops while a call holds a: b has left, a drains.
	release, done = hold()
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	require.Eventually(t, func() bool { return !slices.Contains(f.fleet.Clusters(), "b") }, waitFor, time.Millisecond)
	notReady(t, "a", "b")
	close(release)
	<-done
	require.NoError(t, <-stopped)
	notReady(t, "a", "b")
}

// Failed joins the errors of Each but those of members not ready, each
// named by its member, in the order of the names.
func TestFailed(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	tests := []struct {
		name string
		errs map[string]error
		want string
	}{
		{"none", nil, ""},
		{"all fine", map[string]error{"a": nil, "b": nil}, ""},
		{"not ready only", map[string]error{"a": multicluster.ErrNotReady, "b": fmt.Errorf("%w: %w", multicluster.ErrNotReady, errDown)}, ""},
		{"failed, sorted", map[string]error{"c": multicluster.ErrNotReady, "b": errB, "a": errA, "d": nil}, "member a: a failed\nmember b: b failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := multicluster.Failed(tt.errs)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, errA)
			assert.ErrorIs(t, err, errB)
		})
	}
}
