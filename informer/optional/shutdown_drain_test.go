package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// On a normal stop, Run lets in-flight reconciles finish within the
// shutdown timeout (DESIGN.md: "on cancel it stops taking new keys, lets
// in-flight reconciles finish (bounded by a timeout)"; "on a normal stop
// it drains first"). A controller of an optional resource run the
// documented way (operator.Run with WithInformers(apis)) has them
// drained too: the APIs stop with the same context, and their shutdown
// cancels no claim; only a resource no longer served does.
func TestNormalStopDrainsGatedReconciles(t *testing.T) {
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	entered, release := make(chan struct{}), make(chan struct{})
	cancelled := make(chan error, 1)
	ctrl, err := queue.New("foos", reconcile.Func[cache.ObjectName](func(ctx context.Context, _ cache.ObjectName) (reconcile.Result, error) {
		close(entered)
		select {
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return reconcile.Result{}, ctx.Err()
		case <-release:
			return reconcile.Result{}, nil
		}
	}), queue.WithShutdownTimeout(time.Minute))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- operator.Run(ctx, operator.WithInformers(apis), operator.WithControllers(ctrl)) }()
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("the Foo was never reconciled")
	}

	stop() // SIGTERM: a normal stop, with a minute to drain
	select {
	case cause := <-cancelled:
		close(release)
		<-done
		t.Fatalf("the reconcile in flight was cancelled at once by a normal stop (cause: %v), not drained within the shutdown timeout", cause)
	case <-time.After(time.Second):
	}
	close(release)
	require.NoError(t, <-done)
}
