package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The workers of a controller start only once On's handler has seen its
// informer's initial list, even when the informer synced before the
// controller runs (the operator starts and syncs the APIs first): the
// gate is not synced before its Start has registered the handler, and the
// handler here never finishes the initial list.
func TestWorkersWaitForTheHandlerOfOn(t *testing.T) {
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	startAPIs(t, apis)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)

	for attempt := range 50 {
		release := make(chan struct{})
		blocked := cache.TypedResourceEventHandlerFuncs[*v1alpha1.Foo]{AddFunc: func(*v1alpha1.Foo) { <-release }}
		ran := make(chan struct{}, 1)
		ctrl, err := queue.New("foos", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
			select {
			case ran <- struct{}{}:
			default:
			}
			return reconcile.Result{}, nil
		}))
		require.NoError(t, err)
		require.NoError(t, ctrl.Watch(optional.On[*v1alpha1.Foo, cache.ObjectName](foos, blocked, nil)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		ctrl.Add(cache.ObjectName{Namespace: "default", Name: "other"})
		select {
		case <-ran:
			cancel()
			close(release)
			<-done
			t.Fatalf("attempt %d: a worker reconciled a key although the handler of On has not seen its informer's initial list", attempt)
		case <-time.After(50 * time.Millisecond):
		}
		cancel()
		close(release)
		<-done
	}
}
