package shard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The tests that wait on Lease timing in real time run in parallel; the two
// that set client-go's feature gates do not, so they run first, alone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	ns, group = "ops", "foo-controller"
	// waitFor is long and the Lease timing of fastConfig generous: the
	// replicas of TestGroup reconcile 600 keys under the race detector, and
	// on a busy machine a renewal that does not come back within the renew
	// deadline (by design) stops a replica for good.
	waitFor = 60 * time.Second
	poll    = 20 * time.Millisecond
)

func fastConfig(client *fake.Clientset, identity string) shard.Config {
	return shard.Config{
		Client: client, Namespace: ns, Group: group, Identity: identity,
		LeaseDuration: 10 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: 500 * time.Millisecond,
	}
}

// world is a group of replicas in one process sharing a fake API server,
// with a reconciler that records which replica holds which key and flags
// any key held by two replicas at once.
type world struct {
	t      *testing.T
	client *fake.Clientset
	keys   []string

	mu       sync.Mutex
	holding  map[string]string         // key -> replica reconciling it now
	done     map[string]map[string]int // replica -> key -> reconciles
	overlaps []string                  // descriptions of double holds
	failing  map[string]bool           // lease names whose updates fail
	replicas map[string]*replica       // by identity
	order    []string
}

type replica struct {
	m       *shard.Membership
	cancel  context.CancelFunc
	runErr  chan error
	ctrlErr chan error

	once            sync.Once
	ctrlRes, runRes error
}

// stop stops the replica and returns what its controller's and its
// membership's Run returned.
func (r *replica) stop() (ctrlErr, runErr error) {
	r.once.Do(func() {
		r.cancel()
		r.ctrlRes, r.runRes = <-r.ctrlErr, <-r.runErr
	})
	return r.ctrlRes, r.runRes
}

func newWorld(t *testing.T, keys int) *world {
	w := &world{t: t, client: fake.NewClientset(), holding: map[string]string{}, done: map[string]map[string]int{},
		failing: map[string]bool{}, replicas: map[string]*replica{}}
	for i := range keys {
		w.keys = append(w.keys, fmt.Sprintf("default/foo-%d", i))
	}
	w.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.failing[l.Name] {
			return true, nil, apierrors.NewServiceUnavailable("partitioned")
		}
		return false, nil, nil
	})
	t.Cleanup(w.stopAll)
	return w
}

// start runs a replica named id: its membership, and a controller of the
// world's keys behind its gate, fed every 50ms with every key.
func (w *world) start(id string) *replica {
	m, err := shard.New(fastConfig(w.client, id))
	require.NoError(w.t, err)
	gate := shard.NewGate(m, shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return w.keys }})
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		w.mu.Lock()
		if other, ok := w.holding[key]; ok {
			w.overlaps = append(w.overlaps, fmt.Sprintf("%s reconciled %s while %s held it", id, key, other))
		} else {
			w.holding[key] = id
		}
		if w.done[id] == nil {
			w.done[id] = map[string]int{}
		}
		w.done[id][key]++
		w.mu.Unlock()
		// Hold the key a little, so that overlapping holds would show.
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
		}
		w.mu.Lock()
		if w.holding[key] == id {
			delete(w.holding, key)
		}
		w.mu.Unlock()
		return reconcile.Result{}, ctx.Err()
	})
	ctrl, err := queue.New("shard-"+id, r, queue.WithWorkers(4))
	require.NoError(w.t, err)
	require.NoError(w.t, ctrl.Restrict(gate))
	require.NoError(w.t, ctrl.Watch(queue.Periodic(ctrl, 250*time.Millisecond, func(context.Context) ([]string, error) { return w.keys, nil })))
	ctx, stop := context.WithCancel(context.Background())
	rep := &replica{m: m, cancel: stop, runErr: make(chan error, 1), ctrlErr: make(chan error, 1)}
	go func() { rep.runErr <- m.Run(ctx) }()
	go func() { rep.ctrlErr <- ctrl.Run(ctx) }()
	w.mu.Lock()
	w.replicas[id] = rep
	w.order = append(w.order, id)
	w.mu.Unlock()
	return rep
}

func (w *world) stopAll() {
	for _, id := range w.order {
		w.replicas[id].stop()
	}
}

// settled waits until every replica in ids sees exactly ids as members
// and every key was reconciled by its owner among them since mark.
func (w *world) settled(ids []string, mark map[string]map[string]int) {
	w.t.Helper()
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = shard.LeaseName(group, id)
	}
	require.EventuallyWithT(w.t, func(c *assert.CollectT) {
		for _, id := range ids {
			assert.ElementsMatch(c, names, w.replicas[id].m.Members(), "members seen by %s", id)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, key := range w.keys {
			owner := ids[indexOf(names, shard.Assign(names, key))]
			assert.Greater(c, w.done[owner][key], mark[owner][key], "%s not reconciled by its owner %s", key, owner)
		}
	}, waitFor, poll)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// snapshot copies the reconcile counts.
func (w *world) snapshot() map[string]map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]map[string]int{}
	for id, keys := range w.done {
		out[id] = map[string]int{}
		for k, n := range keys {
			out[id][k] = n
		}
	}
	return out
}

// reconciledSince returns, per replica, the keys it reconciled after mark.
func (w *world) reconciledSince(mark map[string]map[string]int) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for id, keys := range w.done {
		for k, n := range keys {
			if n > mark[id][k] {
				out[id]++
			}
		}
	}
	return out
}

func (w *world) noOverlaps() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(w.t, w.overlaps, "keys reconciled by two replicas at once")
}

// TestGroup runs replicas through a join, a normal stop and a partition,
// while every replica keeps reconciling its keys, and checks that each key
// has exactly one owner and that no key is ever held by two replicas.
func TestGroup(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 600)
	for _, id := range []string{"a", "b", "c"} {
		w.start(id)
	}
	w.settled([]string{"a", "b", "c"}, nil)
	w.noOverlaps()
	mark := w.snapshot()
	w.settled([]string{"a", "b", "c"}, mark)
	split := w.reconciledSince(mark)
	t.Logf("split of %d keys over 3 replicas: %v", len(w.keys), split)
	for _, id := range []string{"a", "b", "c"} {
		assert.InDelta(t, len(w.keys)/3, split[id], float64(len(w.keys))/3*0.25, "keys of %s", id)
	}
	assert.Equal(t, len(w.keys), split["a"]+split["b"]+split["c"], "every key is reconciled by exactly one replica")

	t.Log("a fourth replica joins")
	w.start("d")
	w.settled([]string{"a", "b", "c", "d"}, w.snapshot())
	w.noOverlaps()

	t.Log("b stops normally: its Lease is deleted and its keys move at once")
	ctrlErr, runErr := w.replicas["b"].stop()
	require.NoError(t, ctrlErr)
	require.NoError(t, runErr)
	_, err := w.client.CoordinationV1().Leases(ns).Get(context.Background(), shard.LeaseName(group, "b"), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "b's Lease is deleted, got %v", err)
	w.settled([]string{"a", "c", "d"}, w.snapshot())
	w.noOverlaps()

	t.Log("c is cut off from the API server: it stops reconciling, and the others take its keys once its Lease expires")
	cutAt := time.Now()
	w.mu.Lock()
	w.failing[shard.LeaseName(group, "c")] = true
	w.mu.Unlock()
	c := w.replicas["c"]
	select {
	case err := <-c.runErr:
		require.ErrorIs(t, err, leader.ErrLeaseLost)
		assert.ErrorContains(t, err, "lost the Lease")
		c.runErr <- err // for stop
	case <-time.After(waitFor):
		t.Fatal("c did not give up its keys")
	}
	w.settled([]string{"a", "d"}, w.snapshot())
	t.Logf("c's keys reconciled by the others %s after it was cut off", time.Since(cutAt).Round(10*time.Millisecond))
	w.noOverlaps()
}

// TestConfig checks that bad configurations are refused.
func TestConfig(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name string
		cfg  shard.Config
		want string
	}{
		{name: "no client", cfg: shard.Config{Namespace: ns, Group: group}, want: "needs a Client"},
		{name: "group not a label value", cfg: shard.Config{Client: client, Namespace: ns, Group: "not a label"}, want: "group"},
		{name: "durations", cfg: shard.Config{Client: client, Namespace: ns, Group: group, LeaseDuration: time.Second, RenewDeadline: time.Second}, want: "lease duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := shard.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	m, err := shard.New(shard.Config{Client: client, Namespace: ns, Group: group})
	require.NoError(t, err)
	assert.Regexp(t, `^foo-controller-[0-9a-f]{12}$`, m.Name())
}

// TestRunTwice checks that a Membership runs once.
func TestRunTwice(t *testing.T) {
	t.Parallel()
	m, err := shard.New(fastConfig(fake.NewClientset(), "a"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	require.Eventually(t, m.HasSynced, waitFor, poll)
	err = m.Run(ctx)
	require.Error(t, err)
	cancel()
	require.NoError(t, <-done)
}
