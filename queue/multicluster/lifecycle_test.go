package multicluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// heldReconciles is a reconcile function that holds the reconciles of the
// keys named "slow" until released, and counts every reconcile.
type heldReconciles struct {
	*recorder
	started chan struct{} // closed when a slow reconcile started
	release chan struct{} // closed to let slow reconciles return
	once    sync.Once

	mu     sync.Mutex
	causes []error // the causes of the slow reconciles' cancellations, nil if none
}

func newHeldReconciles() *heldReconciles {
	return &heldReconciles{recorder: newRecorder(), started: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldReconciles) reconcile(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
	if key.Name != "slow" {
		return h.copyCluster(ctx, m, key)
	}
	h.recorder.mu.Lock()
	h.seen[key]++
	h.recorder.mu.Unlock()
	h.once.Do(func() { close(h.started) })
	<-h.release // a reconcile that takes its time, whatever its context says
	h.mu.Lock()
	h.causes = append(h.causes, context.Cause(ctx))
	h.mu.Unlock()
	return reconcile.Result{}, nil
}

func (h *heldReconciles) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(waitFor):
		t.Fatal("the slow reconcile did not start")
	}
}

// An informer event during the drain of a member whose probes failed does
// not crash the process: the member is engaged again, and the key of an
// object deleted during the drain (which the next list does not show) is
// reconciled then.
func TestEventDuringDrainAfterFailedProbes(t *testing.T) {
	c := newClusters("a")
	h := newHeldReconciles()
	f := startFleet(t, c, h.reconcile, multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	tracker := c.clients["a"].Tracker()
	// Already annotated: its reconciles write nothing, so that its only
	// events are its creation and its deletion.
	cm := configMap("app", "doomed", "a")
	cm.Annotations = map[string]string{"reconciled-for": "a"}
	require.NoError(t, tracker.Add(cm))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	doomed := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "doomed")}
	require.Eventually(t, func() bool { return h.count(doomed) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Add(configMap("app", "slow", "a")))
	h.waitStarted(t)

	// The probes fail; the drain waits for the slow reconcile.
	c.down["a"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
	require.NoError(t, tracker.Delete(configMaps, "app", "doomed"))
	require.Eventually(t, func() bool { return c.saw("a", "app", "doomed") == 2 }, waitFor, time.Millisecond, "the deletion reached the handlers")
	close(h.release)
	c.down["a"].Store(false)
	require.Eventually(t, func() bool { return h.count(doomed) == 2 }, waitFor, time.Millisecond,
		"the key of the object deleted during the drain is reconciled once the member is ready again")
	st, _ := f.fleet.Status("a")
	assert.True(t, st.Ready)
}

// Keys added for a member that is engaging (joining, engaged again after
// failed probes, or with rotated credentials) are held and reconciled once
// it is ready, not dropped.
func TestKeysOfEngagingMemberAreHeld(t *testing.T) {
	direct := func(cluster string) multicluster.Key {
		return multicluster.Key{Cluster: cluster, ObjectName: cacheName("app", "direct")}
	}
	tests := []struct {
		name string
		// engaging makes member a engaging and returns what makes it
		// ready again.
		engaging func(t *testing.T, f *fleetUnderTest) (ready func())
	}{
		{name: "joining", engaging: func(t *testing.T, f *fleetUnderTest) func() {
			hold := make(chan struct{})
			f.clusters.mu.Lock()
			f.clusters.hold["a"] = hold
			f.clusters.mu.Unlock()
			f.members.Set("a", f.clusters.config("a"))
			f.members.Synced()
			require.Eventually(t, func() bool { return slices.Contains(f.fleet.Clusters(), "a") }, waitFor, time.Millisecond)
			return func() { close(hold) }
		}},
		{name: "engaged again after failed probes", engaging: func(t *testing.T, f *fleetUnderTest) func() {
			f.members.Set("a", f.clusters.config("a"))
			f.members.Synced()
			require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
			f.clusters.down["a"].Store(true)
			require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
			return func() { f.clusters.down["a"].Store(false) }
		}},
		{name: "credentials rotated", engaging: func(t *testing.T, f *fleetUnderTest) func() {
			f.members.Set("a", f.clusters.config("a"))
			f.members.Synced()
			require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return st.Ready }, waitFor, time.Millisecond)
			hold := make(chan struct{})
			f.clusters.mu.Lock()
			f.clusters.hold["a"] = hold
			f.clusters.mu.Unlock()
			rotated := f.clusters.config("a")
			rotated.BearerToken = "rotated"
			f.members.Set("a", rotated)
			require.Eventually(t, func() bool { st, _ := f.fleet.Status("a"); return !st.Ready }, waitFor, time.Millisecond)
			return func() { close(hold) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClusters("a")
			r := newRecorder()
			f := startFleet(t, c, r.copyCluster, multicluster.WithProbeInterval(10*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
			ready := tt.engaging(t, f)
			f.ctrl.Add(direct("a"))
			f.ctrl.AddLowPriority(multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "low")})
			ready()
			require.Eventually(t, func() bool { return r.count(direct("a")) > 0 }, waitFor, time.Millisecond, "the key added while the member was engaging")
			require.Eventually(t, func() bool { return r.count(multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "low")}) > 0 }, waitFor, time.Millisecond)
		})
	}
}

// At a normal stop, the reconciles in flight finish undisturbed within the
// controller's shutdown timeout; past it they are cancelled as the
// controller cancels them, not with ErrLeft.
func TestStopDrainsReconciles(t *testing.T) {
	t.Run("within the shutdown timeout", func(t *testing.T) {
		c := newClusters("a")
		h := newHeldReconciles()
		f := startFleetWith(t, c, h.reconcile, []queue.Option{queue.WithWorkers(2), queue.WithShutdownTimeout(waitFor)})
		require.NoError(t, c.clients["a"].Tracker().Add(configMap("app", "slow", "a")))
		f.members.Set("a", c.config("a"))
		f.members.Synced()
		h.waitStarted(t)
		stopped := make(chan error, 1)
		go func() { stopped <- f.stop() }()
		assert.Never(t, func() bool { return len(stopped) > 0 }, 200*time.Millisecond, 10*time.Millisecond, "stopped before the reconcile in flight returned")
		close(h.release)
		select {
		case err := <-stopped:
			require.NoError(t, err)
		case <-time.After(waitFor):
			t.Fatal("the fleet did not stop")
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		assert.Equal(t, []error{nil}, h.causes, "the reconcile in flight was cancelled")
	})
	t.Run("past the shutdown timeout", func(t *testing.T) {
		c := newClusters("a")
		started := make(chan struct{})
		causes := make(chan error, 1)
		r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return reconcile.Result{}, ctx.Err()
		}
		f := startFleetWith(t, c, r, []queue.Option{queue.WithWorkers(1), queue.WithShutdownTimeout(100 * time.Millisecond)})
		f.members.Set("a", c.config("a"))
		f.members.Synced()
		select {
		case <-started:
		case <-time.After(waitFor):
			t.Fatal("no reconcile started")
		}
		start := time.Now()
		require.NoError(t, f.stop())
		cause := <-causes
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "cancelled before the shutdown timeout")
		assert.ErrorIs(t, cause, context.Canceled)
		assert.NotErrorIs(t, cause, multicluster.ErrLeft, "a stop is no leave")
	})
}

// With sharding, the fleet has not synced before its membership has a
// view: until then it does not know which members it must try.
func TestShardedHasSyncedWaitsForTheMembership(t *testing.T) {
	mgmt := fake.NewClientset()
	m, err := shard.New(shard.Config{Client: mgmt, Namespace: "fleet-system", Group: "copier", Identity: "a",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 100 * time.Millisecond})
	require.NoError(t, err)
	c := newClusters("a", "b")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithSharding(m))
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	f.members.Synced()
	assert.Never(t, f.fleet.HasSynced, 300*time.Millisecond, 10*time.Millisecond, "synced without a view of the membership")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	require.Eventually(t, f.fleet.HasSynced, waitFor, time.Millisecond)
	for _, name := range []string{"a", "b"} {
		st, held := f.fleet.Status(name)
		assert.True(t, held && (st.Ready || st.Err != nil), "member %s was not tried before the fleet synced", name)
	}
}

// A reconcile cancelled because its member moved to another replica ends
// with ErrLeft, as documented.
func TestMovedMemberCancelsWithErrLeft(t *testing.T) {
	// Every member has a reconcile in flight, which holds it until
	// cancelled: those of the members the second replica takes are
	// cancelled by the move.
	w := &shardedWorld{mgmt: fake.NewClientset(), holding: map[string]string{}, hold: time.Hour, shutdown: 100 * time.Millisecond, workers: 16}
	for i := range 16 {
		w.names = append(w.names, fmt.Sprintf("member-%02d", i))
	}
	w.clusters = newClusters(w.names...)
	a := w.start(t, "a")
	require.Eventually(t, func() bool { return slices.Equal(a.fleet.Clusters(), w.names) }, waitFor, 20*time.Millisecond)
	// Not before every member's reconcile holds it on a: a member that
	// moves before its reconcile started has none to cancel.
	require.Eventually(t, func() bool { return w.heldBy("a") == len(w.names) }, waitFor, 20*time.Millisecond,
		"a reconcile holds every member on a")
	b := w.start(t, "b")
	require.Eventually(t, func() bool { return len(b.fleet.Clusters()) > 0 }, waitFor, 20*time.Millisecond, "b takes members")
	require.Eventually(t, func() bool { return len(w.cancelled()) > 0 }, waitFor, 20*time.Millisecond,
		"a member moved while a reconcile held it")
	for _, cause := range w.cancelled() {
		assert.ErrorIs(t, cause, multicluster.ErrLeft)
	}
	b.stop()
	a.stop()
}

// heldBy is how many members a reconcile of replica id holds now.
func (w *shardedWorld) heldBy(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, holder := range w.holding {
		if holder == id {
			n++
		}
	}
	return n
}

func (w *shardedWorld) cancelled() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var moved []error
	for _, err := range w.causes {
		if !errors.Is(err, context.Canceled) || errors.Is(err, multicluster.ErrLeft) {
			moved = append(moved, err)
		}
	}
	return moved
}
