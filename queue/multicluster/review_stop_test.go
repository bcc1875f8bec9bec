package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A reconcile that ignores its context past its controller's shutdown
// timeout makes the controller's Run return (ErrShutdownTimeout, after
// twice the timeout); the Fleet's Run must not wait for it forever
// either, or operator.Run never returns and --shutdown-timeout bounds
// nothing.
func TestReviewStopWithReconcileIgnoringContext(t *testing.T) {
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
