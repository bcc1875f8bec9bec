package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A reconcile that ignores its context past its controller's shutdown
// timeout makes the controller's Run return (ErrShutdownTimeout, after
// twice the timeout); the Fleet's Run does not wait for it forever
// either (operator.Run would never return), but one second more.
func TestStopWithReconcileIgnoringContext(t *testing.T) {
	c := newClusters("a")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{})
	var once sync.Once
	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(_ context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		_, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
		return &member{name: cl.Name, client: cl.Client}, err
	}
	r := func(context.Context, *member, multicluster.Key) (reconcile.Result, error) {
		once.Do(func() { close(started) })
		<-release // ignores its context
		return reconcile.Result{}, nil
	}
	fleet, err := multicluster.New("test", p, engage, multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "configmaps", r, queue.WithShutdownTimeout(50*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleetErr, ctrlErr := make(chan error, 1), make(chan error, 1)
	go func() { fleetErr <- fleet.Run(ctx) }()
	go func() { ctrlErr <- ctrl.Run(ctx) }()
	m := <-p.members
	m.Set("a", c.config("a"))
	m.Synced()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("no reconcile started")
	}
	cancel()
	select {
	case err := <-ctrlErr:
		require.ErrorIs(t, err, queue.ErrShutdownTimeout, "the controller gave up on the reconcile")
	case <-time.After(waitFor):
		t.Fatal("the controller did not return")
	}
	select {
	case <-fleetErr:
	case <-time.After(2 * time.Second):
		t.Error("the Fleet's Run did not return 2s after its controller gave up on a reconcile that ignores its context")
	}
}

// With WithSharding and the membership running until the Fleet has
// stopped (as operator.WithSharding runs it), a stop drains: the
// reconciles in flight run on until they finish, none is cancelled.
func TestShardedStopDrains(t *testing.T) {
	w := &shardedWorld{mgmt: fake.NewClientset(), holding: map[string]string{}, names: []string{"member-0"},
		hold: 3 * time.Second, shutdown: waitFor, workers: 1}
	w.clusters = newClusters(w.names...)
	a := w.start(t, "a")
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.holding["member-0"] == "a"
	}, waitFor, time.Millisecond, "a reconcile is in flight")
	a.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.causes, "reconciles in flight at a normal stop are cancelled (the controller's shutdown timeout is %s)", waitFor)
}

// A member deleted during the drain of a stop has its reconcile
// cancelled at once with ErrLeft, rather than running on until the
// shutdown timeout with the member's credentials.
func TestLeaveDuringStopDrain(t *testing.T) {
	c := newClusters("a")
	started := make(chan struct{})
	release := make(chan struct{})
	causes := make(chan error, 1)
	r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		if key.Name != "slow" {
			return reconcile.Result{}, nil
		}
		close(started)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-release:
			causes <- nil
		}
		return reconcile.Result{}, nil
	}
	f := startFleetWith(t, c, r, []queue.Option{queue.WithWorkers(2), queue.WithShutdownTimeout(waitFor)})
	require.NoError(t, c.clients["a"].Tracker().Add(configMap("app", "slow", "a")))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("no reconcile started")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()
	time.Sleep(100 * time.Millisecond) // the drain has begun
	f.members.Delete("a")
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, multicluster.ErrLeft, "the reconcile of the member that left during the drain")
	case <-time.After(2 * time.Second):
		t.Error("the reconcile of a member deleted during the drain was not cancelled within 2s")
		close(release)
	}
	select {
	case <-stopped:
	case <-time.After(waitFor):
		t.Fatal("the fleet did not stop")
	}
}

// contractProvider keeps the Provider contract ("Run reports the members
// to m until ctx ends, then returns nil"), as the kubeconfig and
// clusterprofile providers do: it reports the deletions sent to it while
// its ctx lives.
type contractProvider struct {
	sets    chan string
	deletes chan string
	c       *clusters
}

func (p *contractProvider) Run(ctx context.Context, m multicluster.Members) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case name := <-p.sets:
			m.Set(name, p.c.config(name))
			m.Synced()
		case name := <-p.deletes:
			m.Delete(name)
		}
	}
}

// The Provider runs on during a stop's drain, its context not yet ended,
// so a Provider that keeps its contract still reports a member that
// leaves meanwhile, whose reconcile is then cancelled with ErrLeft.
func TestProviderReportsALeaveDuringStopDrain(t *testing.T) {
	c := newClusters("a")
	p := &contractProvider{sets: make(chan string), deletes: make(chan string), c: c}
	started := make(chan struct{})
	release := make(chan struct{})
	causes := make(chan error, 1)
	r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		if key.Name != "slow" {
			return reconcile.Result{}, nil
		}
		close(started)
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-release:
			causes <- nil
		}
		return reconcile.Result{}, nil
	}
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(_ context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	fleet, err := multicluster.New("test", p, engage, multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "configmaps", r, queue.WithWorkers(2), queue.WithShutdownTimeout(waitFor))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	fleetErr, ctrlErr := make(chan error, 1), make(chan error, 1)
	go func() { fleetErr <- fleet.Run(ctx) }()
	go func() { ctrlErr <- ctrl.Run(ctx) }()
	require.NoError(t, c.clients["a"].Tracker().Add(configMap("app", "slow", "a")))
	p.sets <- "a"
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("no reconcile started")
	}
	cancel()                           // the stop: the drain waits for the slow reconcile
	time.Sleep(100 * time.Millisecond) // the drain has begun
	select {
	case p.deletes <- "a":
	case <-time.After(time.Second):
		t.Error("the Provider, its context ended at the start of the stop, can no longer report that the member left")
	}
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, multicluster.ErrLeft, "the reconcile of the member that left during the drain")
	case <-time.After(2 * time.Second):
		t.Error("the reconcile of a member deleted during the drain was not cancelled within 2s")
		close(release)
	}
	for _, errs := range []chan error{fleetErr, ctrlErr} {
		select {
		case <-errs:
		case <-time.After(waitFor):
			t.Fatal("the fleet or its controller did not stop")
		}
	}
}
