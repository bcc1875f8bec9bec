package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// docs/optional-apis.md, "installed again": "once the handler has seen
// that list, the keys On dropped or cancelled meanwhile run again too".
// A reconcile cancelled as the CRD goes away that takes a moment to
// return (an API call that ends at its own pace) returns after the CRD
// was installed again and the dropped keys were queued: its release
// records the key as dropped, after the only requeue that would take it,
// and the key never runs again (until the CRD goes and comes once more).
func TestReconcileCancelledByAQuickCRDReturnRunsAgain(t *testing.T) {
	crds := crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true))
	apis := optional.NewAPIs(crds, nil)
	newInformer, _ := fooInformers(foofake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)

	slow := cache.ObjectName{Namespace: "default", Name: "slow"}
	entered := make(chan struct{}, 10)
	cancelled := make(chan struct{}, 10)
	returnNow := make(chan struct{})
	runs := make(chan struct{}, 10)
	ctrl, err := queue.New("bars", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		runs <- struct{}{}
		entered <- struct{}{}
		select {
		case <-ctx.Done():
		case <-returnNow:
			return reconcile.Result{}, nil
		}
		cancelled <- struct{}{}
		<-returnNow // the cancelled request ends at its own pace
		return reconcile.Result{}, ctx.Err()
	}), queue.WithShutdownTimeout(time.Second))
	require.NoError(t, err)
	none := cache.TypedResourceEventHandlerFuncs[*v1alpha1.Foo]{}
	require.NoError(t, ctrl.Watch(optional.On(foos, none, optional.AllKeys[cache.ObjectName])))
	startAPIs(t, apis)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		select {
		case <-returnNow:
		default:
			close(returnNow)
		}
		cancel()
		<-done
	})
	require.Eventually(t, ctrl.Running, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)

	ctrl.Add(slow)
	<-entered
	crdsAPI := crds.ApiextensionsV1().CustomResourceDefinitions()
	require.NoError(t, crdsAPI.Delete(context.Background(), "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	select {
	case <-cancelled:
	case <-time.After(waitFor):
		t.Fatal("the reconcile in flight was not cancelled as the CRD went away")
	}
	_, err = crdsAPI.Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the handler has seen the new (empty) list; the dropped keys were queued

	close(returnNow) // the cancelled reconcile returns now
	require.Eventually(t, func() bool { return len(runs) == 2 }, 5*time.Second, 5*time.Millisecond,
		"the key whose reconcile was cancelled as the CRD went away never ran again after the CRD was installed again (it ran %d times)", len(runs))
}
