package shard_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
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
	gate    *shard.Gate[string]
	ctrl    *queue.Controller[string]
	started time.Time
	cancel  context.CancelFunc
	runErr  chan error
	ctrlErr chan error
	// ranOut holds what the membership's Run returned, once it has.
	ranOut atomic.Pointer[error]

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
	rep := &replica{m: m, gate: gate, ctrl: ctrl, started: time.Now(), cancel: stop,
		runErr: make(chan error, 1), ctrlErr: make(chan error, 1)}
	go func() {
		err := m.Run(ctx)
		rep.ranOut.Store(&err)
		rep.runErr <- err
	}()
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
//
// It waits in two stages, each allowed waitFor. First every replica must
// see ids, have synced and run its controller's workers: the first join
// alone takes LeaseDuration (a joining replica claims nothing before)
// plus however far the Lease informers lag on a loaded machine, time the
// reconcilers cannot use. Then every key must be reconciled by its owner,
// the members still agreeing. A replica whose membership returned (a lost
// Lease) never reconciles again, so either stage fails at once, naming it.
//
// The check runs every poll while the reconcilers need w.mu twice per
// key, so it holds w.mu only to compare counts, and it records one
// reason to wait, not a failed assertion per key: those 600 assertions,
// each formatted with its stack under w.mu, took 60 to 100 ms of CPU per
// check under the race detector. Polled every 20 ms, the check held w.mu
// most of the time, starving the reconcilers, and took most of a CPU from
// the Lease renewals, which on a loaded machine came back later than
// RenewDeadline, so that every replica lost its Lease before it
// reconciled its keys.
func (w *world) settled(ids []string, mark map[string]map[string]int) {
	w.t.Helper()
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = shard.LeaseName(group, id)
	}
	owners := make(map[string]string, len(w.keys))
	for _, key := range w.keys {
		owners[key] = ids[indexOf(names, shard.Assign(names, key))]
	}
	members := slices.Sorted(slices.Values(names))
	ready := func() (string, error) {
		for _, id := range ids {
			r := w.replicas[id]
			if err := r.ranOut.Load(); err != nil {
				return "", fmt.Errorf("the membership of %s returned: %w", id, *err)
			}
			switch seen := r.m.Members(); {
			case !slices.Equal(members, seen):
				return fmt.Sprintf("%s sees the members %v", id, seen), nil
			case !r.m.HasSynced():
				return fmt.Sprintf("the membership of %s has not synced", id), nil
			case !r.ctrl.Running():
				return fmt.Sprintf("the workers of %s do not run", id), nil
			}
		}
		return "", nil
	}
	w.waitUntil(ids, mark, "every replica sees the members and runs its workers", ready)
	w.waitUntil(ids, mark, "every key is reconciled by its owner", func() (string, error) {
		if why, err := ready(); why != "" || err != nil {
			return why, err
		}
		missing, example := 0, ""
		w.mu.Lock()
		for _, key := range w.keys {
			if owner := owners[key]; w.done[owner][key] <= mark[owner][key] {
				if missing == 0 {
					example = fmt.Sprintf("%s (owner %s)", key, owner)
				}
				missing++
			}
		}
		w.mu.Unlock()
		if missing > 0 {
			return fmt.Sprintf("%d keys not reconciled by their owner, %s among them", missing, example), nil
		}
		return "", nil
	})
}

// waitUntil polls check until it returns no reason to wait, for up to
// waitFor, and fails the test, describing every replica, if check
// returns an error or the time runs out.
func (w *world) waitUntil(ids []string, mark map[string]map[string]int, what string, check func() (why string, err error)) {
	w.t.Helper()
	start := time.Now()
	why := ""
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitFor, true, func(context.Context) (bool, error) {
		var err error
		why, err = check()
		return why == "" && err == nil, err
	})
	if err != nil {
		w.describe(ids, mark)
		if why != "" {
			err = fmt.Errorf("%w; last seen: %s", err, why)
		}
		w.t.Fatalf("waiting on %v until %s: %v, after %s", ids, what, err, time.Since(start).Round(time.Millisecond))
	}
	w.t.Logf("%s on %v after %s", what, ids, time.Since(start).Round(time.Millisecond))
}

// describe logs what each replica sees: whether its membership still
// runs, its members, whether it synced, how many keys its gate owns and
// how many it reconciled since mark, and its controller's state.
func (w *world) describe(ids []string, mark map[string]map[string]int) {
	w.t.Helper()
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = shard.LeaseName(group, id)
	}
	w.mu.Lock()
	order := slices.Clone(w.order)
	w.mu.Unlock()
	for _, id := range order {
		r := w.replicas[id]
		run := "running"
		if err := r.ranOut.Load(); err != nil {
			run = fmt.Sprintf("returned %v", *err)
		}
		owned, shouldOwn := 0, 0
		for _, key := range w.keys {
			if r.gate.Owns(key) {
				owned++
			}
			if slices.Contains(ids, id) && shard.Assign(names, key) == shard.LeaseName(group, id) {
				shouldOwn++
			}
		}
		w.mu.Lock()
		since, total := 0, 0
		for key, n := range w.done[id] {
			total += n
			if n > mark[id][key] {
				since++
			}
		}
		w.mu.Unlock()
		w.t.Logf("replica %s (%s, up %s): membership %s; members %v; HasSynced %t; gate owns %d keys (%d by the target list); reconciled %d keys since the mark, %d reconciles in all; controller synced %t, workers running %t, queued %d",
			id, shard.LeaseName(group, id), time.Since(r.started).Round(time.Millisecond), run, r.m.Members(), r.m.HasSynced(),
			owned, shouldOwn, since, total, r.ctrl.HasSynced(), r.ctrl.Running(), r.ctrl.Len())
	}
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
