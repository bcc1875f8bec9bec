package multicluster_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// hangingClients builds the clients of fake clusters, but its first call
// for the cluster "hung" hangs, as a constructor that waits on a member
// that does not answer: until its context ends if honours is set, else
// until the test ends.
type hangingClients struct {
	*clusters
	honours bool
	hung    chan struct{} // closed when the test ends

	mu      sync.Mutex
	calls   int
	hungCtx context.Context // the context of the call that hangs
	entered chan struct{}   // closed once that call started
}

func (h *hangingClients) newClient(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
	if name == "hung" {
		h.mu.Lock()
		h.calls++
		first := h.calls == 1
		if first {
			h.hungCtx = ctx
			close(h.entered)
		}
		h.mu.Unlock()
		if first {
			if !h.honours {
				<-h.hung
				return nil, context.Canceled
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-h.hung:
				return nil, context.Canceled
			}
		}
	}
	return h.clusters.newClient(ctx, name, cfg)
}

// callsFor returns the number of calls for the cluster "hung".
func (h *hangingClients) callsFor() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// clientOnly is an engage function that keeps the cluster's client.
func clientOnly(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
	return &member{name: cl.Name, client: cl.Client}, nil
}

func reconcileNothing(context.Context, *member, multicluster.Key) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

// A client constructor that hangs on a member that does not answer
// neither keeps the member from being removed or changed nor keeps Run
// from returning: its context ends then, and a constructor that ignores
// it is left behind, Run returning an error once it has waited the
// bound. The other members go on meanwhile.
func TestClientConstructorOfAHungMember(t *testing.T) {
	const bound = 200 * time.Millisecond
	tests := []struct {
		name    string
		honours bool
		// leave makes the hung member leave or change; nil: the fleet
		// stops with the constructor hanging.
		leave func(f *runningFleet[*member], c *clusters)
		// again is the config the member is set with afterwards.
		again bool
	}{
		{name: "deleted", honours: true, leave: func(f *runningFleet[*member], _ *clusters) { f.members.Delete("hung") }, again: true},
		{name: "deleted, the constructor ignores its context", leave: func(f *runningFleet[*member], _ *clusters) { f.members.Delete("hung") }, again: true},
		{name: "config changed", honours: true, leave: func(f *runningFleet[*member], c *clusters) {
			cfg := c.config("hung")
			cfg.BearerToken = "rotated"
			f.members.Set("hung", cfg)
		}},
		{name: "config changed, the constructor ignores its context", leave: func(f *runningFleet[*member], c *clusters) {
			cfg := c.config("hung")
			cfg.BearerToken = "rotated"
			f.members.Set("hung", cfg)
		}},
		{name: "fleet stops", honours: true},
		{name: "fleet stops, the constructor ignores its context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &hangingClients{clusters: newClusters("a", "hung"), honours: tt.honours, hung: make(chan struct{}), entered: make(chan struct{})}
			t.Cleanup(func() { close(h.hung) }) // after the fleet stopped
			f := runFleet(t, clientOnly, reconcileNothing, multicluster.WithClients(h.newClient), multicluster.WithClientStopTimeout(bound))
			f.members.Set("a", h.config("a"))
			f.members.Set("hung", h.config("hung"))
			f.members.Synced()
			f.ready(t, "a")
			select {
			case <-h.entered:
			case <-time.After(waitFor):
				t.Fatal("the hung member's client constructor was not called")
			}
			st, _ := f.fleet.Status("hung")
			assert.False(t, st.Ready)

			if tt.leave != nil {
				tt.leave(f, h.clusters)
				if tt.again {
					require.Eventually(t, func() bool { _, held := f.fleet.Status("hung"); return !held }, waitFor, time.Millisecond,
						"the member is removed")
					assert.Equal(t, []string{"a"}, f.fleet.Clusters())
					f.members.Set("hung", h.config("hung"))
				}
				f.ready(t, "hung")
				assert.Equal(t, 2, h.callsFor(), "a client is built again for the member")
				assert.Error(t, h.hungCtx.Err(), "the hanging constructor's context ended")
			}
			st, _ = f.fleet.Status("a")
			assert.True(t, st.Ready, "the other member goes on")

			err := f.stop(t, waitFor)
			assert.Error(t, h.hungCtx.Err(), "the hanging constructor's context ended")
			if tt.honours {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "client constructors still running 200ms after the stop")
			}
		})
	}
}

// A client constructor that honours its context fails the attempt once
// the sync timeout has passed: the member is reported and retried, and
// the fleet has synced.
func TestClientConstructorSyncTimeout(t *testing.T) {
	h := &hangingClients{clusters: newClusters("hung"), honours: true, hung: make(chan struct{}), entered: make(chan struct{})}
	t.Cleanup(func() { close(h.hung) })
	f := runFleet(t, clientOnly, reconcileNothing, multicluster.WithClients(h.newClient), multicluster.WithSyncTimeout(100*time.Millisecond))
	f.members.Set("hung", h.config("hung"))
	f.members.Synced()
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("hung"); return st.Failures > 0 }, waitFor, time.Millisecond)
	st, _ := f.fleet.Status("hung")
	assert.ErrorIs(t, st.Err, context.DeadlineExceeded)
	assert.True(t, f.fleet.HasSynced(), "a member whose client could not be built was tried")
	f.ready(t, "hung")
	assert.NoError(t, f.stop(t, waitFor))
}

// A client constructor that panics fails the attempt, which is retried;
// the process and the other members go on.
func TestClientConstructorPanics(t *testing.T) {
	c := newClusters("a", "b")
	var calls atomic.Int32
	newClient := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		if name == "b" && calls.Add(1) == 1 {
			panic("no client for b")
		}
		return c.newClient(ctx, name, cfg)
	}
	metrics := &fleetMetrics{}
	f := runFleet(t, clientOnly, reconcileNothing, multicluster.WithClients(newClient), multicluster.WithMetrics(metrics))
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	f.members.Synced()
	f.ready(t, "a")
	f.ready(t, "b")
	st, _ := f.fleet.Status("b")
	assert.Zero(t, st.Failures, "b is ready")
	assert.Equal(t, 1, metrics.failures("b"), "the attempt that panicked failed")
	assert.Equal(t, int32(2), calls.Load(), "the attempt that panicked was retried")
	assert.NoError(t, f.stop(t, waitFor))
}
