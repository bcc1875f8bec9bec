package multicluster_test

import (
	"context"
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

// Fleet.Run promises that during a stop's drain "a cluster that leaves or
// moves meanwhile (the Provider deletes it, say) has its reconciles
// cancelled at once, with ErrLeft". But Run cancels the Provider's context
// before the drain starts, so a Provider that keeps its contract can no
// longer report the deletion: the member's reconcile runs on with the
// deleted member's credentials until the controller's shutdown timeout.
// (TestReviewLeaveDuringStopDrain passes only because it calls Delete on
// the Members after its Provider's Run returned.)
func TestReviewProviderCannotReportALeaveDuringStopDrain(t *testing.T) {
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
