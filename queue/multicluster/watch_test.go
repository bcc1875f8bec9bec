package multicluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// changeLog is the keys function of an OnMembers watch: it keeps every
// change delivered, and maps it to the hub key "hub/<cluster>".
type changeLog struct {
	mu      sync.Mutex
	changes []multicluster.MemberChange
	stopped bool // set once the hub controller's Run returned
	late    int  // changes delivered after that
}

func (l *changeLog) keys(c multicluster.MemberChange) []cache.ObjectName {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		l.late++
	}
	l.changes = append(l.changes, c)
	return []cache.ObjectName{cacheName("hub", c.Cluster)}
}

// last returns the last change delivered for cluster.
func (l *changeLog) last(cluster string) (multicluster.MemberChange, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.changes) - 1; i >= 0; i-- {
		if l.changes[i].Cluster == cluster {
			return l.changes[i], true
		}
	}
	return multicluster.MemberChange{}, false
}

// hubUnderTest is a controller of hub keys fed by OnMembers.
type hubUnderTest struct {
	ctrl *queue.Controller[cache.ObjectName]
	mu   sync.Mutex
	seen map[cache.ObjectName]int
	stop func()
}

func (h *hubUnderTest) count(k cache.ObjectName) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[k]
}

// newHub builds a hub controller watching f's members through log; start
// runs it until the test ends (or stop).
func newHub[T any](t *testing.T, f *multicluster.Fleet[T], log *changeLog) *hubUnderTest {
	t.Helper()
	h := &hubUnderTest{seen: map[cache.ObjectName]int{}}
	var err error
	h.ctrl, err = queue.New("hub", reconcile.Func[cache.ObjectName](func(_ context.Context, k cache.ObjectName) (reconcile.Result, error) {
		h.mu.Lock()
		h.seen[k]++
		h.mu.Unlock()
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	require.NoError(t, h.ctrl.Watch(multicluster.OnMembers(f, h.ctrl, log.keys)))
	return h
}

func (h *hubUnderTest) start(t *testing.T, log *changeLog) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.ctrl.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(waitFor):
				t.Error("the hub controller did not stop")
			}
			log.mu.Lock()
			log.stopped = true
			log.mu.Unlock()
		})
	}
	t.Cleanup(h.stop)
}

// Every change of a member (joined and ready, not answering, refused,
// left) reaches the hub controller as its latest state, without polling,
// including the changes made before the hub controller ran.
func TestOnMembersDeliversEveryChange(t *testing.T) {
	c := newClusters("a", "b", "c")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	log := &changeLog{}
	hub := newHub(t, f.fleet, log)
	// Before the hub runs: kept, delivered when it does.
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	hub.start(t, log)

	type want struct {
		held, ready bool
		failed      bool // Status.Err is set
	}
	steps := []struct {
		name    string
		do      func()
		cluster string
		want    want
	}{
		{name: "joined before the hub ran", do: func() {}, cluster: "a", want: want{held: true, ready: true}},
		{name: "joins", do: func() { f.members.Set("b", c.config("b")) }, cluster: "b", want: want{held: true, ready: true}},
		{name: "stops answering", do: func() { c.down["b"].Store(true) }, cluster: "b", want: want{held: true, failed: true}},
		{name: "answers again", do: func() { c.down["b"].Store(false) }, cluster: "b", want: want{held: true, ready: true}},
		{name: "refused", do: func() { f.members.(multicluster.Refuser).Refuse("c", errors.New("bad kubeconfig")) }, cluster: "c", want: want{held: true, failed: true}},
		{name: "leaves", do: func() { f.members.Delete("a") }, cluster: "a", want: want{}},
	}
	for _, step := range steps {
		before := hub.count(cacheName("hub", step.cluster))
		step.do()
		require.Eventually(t, func() bool {
			got, ok := log.last(step.cluster)
			return ok && got.Held == step.want.held && got.Status.Ready == step.want.ready &&
				(got.Status.Err != nil) == step.want.failed
		}, waitFor, time.Millisecond, "%s: the change of %s is delivered", step.name, step.cluster)
		got, _ := log.last(step.cluster)
		st, held := f.fleet.Status(step.cluster)
		assert.Equal(t, held, got.Held, step.name)
		assert.Equal(t, st.Ready, got.Status.Ready, "%s: the last delivery is the member's state", step.name)
		require.Eventually(t, func() bool { return hub.count(cacheName("hub", step.cluster)) > before }, waitFor, time.Millisecond,
			"%s: the hub key of %s is reconciled", step.name, step.cluster)
	}
	got, _ := log.last("c")
	assert.EqualError(t, got.Status.Err, "bad kubeconfig")

	// Once the hub controller stopped, no change is delivered.
	hub.stop()
	f.members.Set("a", c.config("a"))
	f.ready(t, "a")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Zero(t, log.late, "changes delivered after the hub controller stopped")
}

// Changes that come fast are merged per member, and the last delivery of
// each member is its latest state: no change is lost.
func TestOnMembersCoalescesFastChanges(t *testing.T) {
	names := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	c := newClusters(names...)
	f := startFleet(t, c, newRecorder().copyCluster)
	log := &changeLog{}
	hub := newHub(t, f.fleet, log)
	hub.start(t, log)
	for round := range 5 {
		for _, name := range names {
			if round%2 == 0 {
				f.members.Set(name, c.config(name))
			} else {
				f.members.Delete(name)
			}
		}
	}
	// The last round set every member: each ends ready, and so does its
	// last delivery.
	for _, name := range names {
		f.ready(t, name)
	}
	for _, name := range names {
		require.Eventually(t, func() bool {
			got, ok := log.last(name)
			return ok && got.Held && got.Status.Ready
		}, waitFor, time.Millisecond, "the latest state of %s is delivered", name)
	}
	log.mu.Lock()
	n := len(log.changes)
	log.mu.Unlock()
	t.Logf("%d deliveries for %d members in 5 rounds", n, len(names))
}

// A Watch of OnMembers without a fleet, queue or keys function is
// refused.
func TestOnMembersValidation(t *testing.T) {
	c := newClusters()
	f := startFleet(t, c, newRecorder().copyCluster)
	ctrl, err := queue.New("hub", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	keys := func(multicluster.MemberChange) []cache.ObjectName { return nil }
	tests := []struct {
		name  string
		watch queue.Watch
	}{
		{name: "no fleet", watch: multicluster.OnMembers[*member](nil, ctrl, keys)},
		{name: "no queue", watch: multicluster.OnMembers[*member, cache.ObjectName](f.fleet, nil, keys)},
		{name: "no keys", watch: multicluster.OnMembers[*member, cache.ObjectName](f.fleet, ctrl, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, ctrl.Watch(tt.watch))
		})
	}
}

// ready waits until cluster is ready.
func (f *fleetUnderTest) ready(t *testing.T, cluster string) {
	t.Helper()
	require.Eventually(t, func() bool { st, _ := f.fleet.Status(cluster); return st.Ready }, waitFor, time.Millisecond, "cluster %s ready", cluster)
}

// A change whose keys are computed as the controller stops is not added,
// and is kept: the next run of the Watch delivers it.
func TestOnMembersAddsNothingOnceStopped(t *testing.T) {
	c := newClusters("a")
	f := startFleet(t, c, newRecorder().copyCluster)
	q := newAdds()
	entered, unblock := make(chan struct{}), make(chan struct{})
	var calls int
	var mu sync.Mutex
	watch := multicluster.OnMembers(f.fleet, q, func(ch multicluster.MemberChange) []cache.ObjectName {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(entered)
			<-unblock
		}
		return []cache.ObjectName{cacheName("hub", ch.Cluster)}
	})
	run := func(ctx context.Context) <-chan error {
		ctrl, err := queue.New("hub", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
		require.NoError(t, err)
		require.NoError(t, ctrl.Watch(watch))
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx)
	f.members.Set("a", c.config("a"))
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("the change was not delivered")
	}
	cancel()
	close(unblock)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("the controller did not stop")
	}
	assert.Zero(t, q.count(cacheName("hub", "a")), "keys added once the controller's context ended")

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done = run(ctx)
	require.Eventually(t, func() bool { return q.count(cacheName("hub", "a")) > 0 }, waitFor, time.Millisecond,
		"the change is delivered by the next run")
	cancel()
	require.NoError(t, <-done)
}
