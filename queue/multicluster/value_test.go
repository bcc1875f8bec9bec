package multicluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runningFleet is a Fleet of values of type T with one controller, both
// running until stop is called or the test ends.
type runningFleet[T any] struct {
	fleet   *multicluster.Fleet[T]
	ctrl    *queue.Controller[multicluster.Key]
	members multicluster.Members

	cancel   context.CancelFunc
	fleetErr chan error
	ctrlErr  chan error
	once     sync.Once
	err      error
}

// runFleet starts a Fleet over a provider of the test and a controller
// with r. engage is given the controller, for Cluster.Queue.
func runFleet[T any](t *testing.T, engage func(ctx context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (T, error),
	r multicluster.ReconcileFunc[T], opts ...multicluster.Option) *runningFleet[T] {
	t.Helper()
	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	fleet, err := multicluster.New("test", p, func(ctx context.Context, cl *multicluster.Cluster) (T, error) { return engage(ctx, cl, ctrl) },
		append([]multicluster.Option{multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "test", r, queue.WithWorkers(4))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	rf := &runningFleet[T]{fleet: fleet, ctrl: ctrl, cancel: cancel, fleetErr: make(chan error, 1), ctrlErr: make(chan error, 1)}
	go func() { rf.fleetErr <- fleet.Run(ctx) }()
	go func() { rf.ctrlErr <- ctrl.Run(ctx) }()
	t.Cleanup(func() { _ = rf.stop(t, waitFor) })
	select {
	case rf.members = <-p.members:
	case <-time.After(waitFor):
		t.Fatal("the provider did not run")
	}
	return rf
}

// stop stops the fleet and its controller and returns the error of the
// Fleet's Run, which must return within the given time.
func (rf *runningFleet[T]) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	rf.once.Do(func() {
		rf.cancel()
		select {
		case rf.err = <-rf.fleetErr:
		case <-time.After(within):
			rf.err = fmt.Errorf("the fleet's Run did not return within %s", within)
			t.Error(rf.err)
		}
		select {
		case err := <-rf.ctrlErr:
			assert.NoError(t, err, "the controller's Run")
		case <-time.After(waitFor):
			t.Error("the controller did not stop")
		}
	})
	return rf.err
}

// ready waits until cluster is ready.
func (rf *runningFleet[T]) ready(t *testing.T, cluster string) {
	t.Helper()
	require.Eventually(t, func() bool { st, _ := rf.fleet.Status(cluster); return st.Ready }, waitFor, time.Millisecond, "cluster %s ready", cluster)
}

// tagger is an interface for the value type of a fleet.
type tagger interface{ Tag() string }

type tag string

func (t tag) Tag() string { return string(t) }

// The value engage returns, whatever its type, is what Get returns and
// what reconciles get, also the zero value of an interface type (a nil
// interface) or of a pointer type.
func TestValueOfAnyType(t *testing.T) {
	t.Run("nil interface", func(t *testing.T) { checkValue[tagger](t, nil) })
	t.Run("interface", func(t *testing.T) { checkValue[tagger](t, tag("a")) })
	t.Run("nil error", func(t *testing.T) { checkValue[error](t, nil) })
	t.Run("nil any", func(t *testing.T) { checkValue[any](t, nil) })
	t.Run("nil pointer", func(t *testing.T) { checkValue[*member](t, nil) })
	t.Run("zero struct", func(t *testing.T) { checkValue[struct{}](t, struct{}{}) })
}

// checkValue runs a fleet whose engage returns want for its one member,
// and checks that Get returns it and that the member's key is reconciled
// with it.
func checkValue[T comparable](t *testing.T, want T) {
	c := newClusters("a")
	engage := func(_ context.Context, cl *multicluster.Cluster, ctrl *queue.Controller[multicluster.Key]) (T, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		_, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
		return want, err
	}
	got := make(chan T, 1)
	r := func(_ context.Context, v T, _ multicluster.Key) (reconcile.Result, error) {
		select {
		case got <- v:
		default:
		}
		return reconcile.Result{}, nil
	}
	f := runFleet(t, engage, r, multicluster.WithClients(c.newClient))
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	var (
		v  T
		ok bool
	)
	require.NotPanics(t, func() { v, ok = f.fleet.Get("a") })
	assert.True(t, ok, "a ready cluster's value")
	assert.Equal(t, want, v)
	select {
	case v := <-got:
		assert.Equal(t, want, v, "the value a reconcile got")
	case <-time.After(waitFor):
		t.Fatal("the cluster's key was not reconciled")
	}
	_, ok = f.fleet.Get("other")
	assert.False(t, ok, "no value for a cluster that is no member")
	assert.NoError(t, f.stop(t, waitFor))
	_, ok = f.fleet.Get("a")
	assert.False(t, ok, "no value once the fleet stopped")
}
