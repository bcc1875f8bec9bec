package optional_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/reconcile"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// A standby replica (leader election, the Lease held by another) with
// synced caches is ready by default (WithReadinessOnlyWhenLeading: "By
// default a standby replica with synced caches is ready"; Controller.HasSynced:
// "before Run, whether every watched informer has synced its cache, so
// that a standby replica with warm informers reports ready"). A controller
// with an optional.On watch is too: before Run, On's gate reports what its
// Informer's HasSynced does, so a second replica (examples/summary runs
// with leader election) turns ready and a rolling update goes on.
func TestStandbyWithOptionalWatchIsReady(t *testing.T) {
	other := "other"
	kube := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}, AcquireTime: &metav1.MicroTime{Time: time.Now()}},
	})
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	r := newRuns()
	ctrl, err := queue.New("foos", r)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	probes := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(apis), operator.WithProbes(probes),
			operator.WithLeaderElection(leader.Config{Client: kube, Namespace: "ops", Name: "op", Identity: "me"}),
			operator.WithControllers(ctrl))
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, foos.HasSynced, waitFor, time.Millisecond, "the standby's optional informer runs and syncs")

	var code int
	var body string
	ready := func() bool {
		resp, err := http.Get("http://" + probes + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return code == http.StatusOK
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("a standby replica with synced caches is not ready: /readyz %d %q (Foo Informer synced: %v, APIs synced: %v)", code, body, foos.HasSynced(), apis.HasSynced())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// On's gate reports on its Informer only before the controller runs: from
// Run on, the workers wait for On's handler to see the initial list, also
// when the Informer synced long before (a standby replica that becomes the
// leader), and the controller's readiness follows the handler.
func TestGateWaitsForItsHandlerOnceRunStarts(t *testing.T) {
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	release := make(chan struct{})
	slow := cache.TypedResourceEventHandlerFuncs[*v1alpha1.Foo]{AddFunc: func(*v1alpha1.Foo) { <-release }}
	ctrl, err := queue.New("foos", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, slow, optional.AllKeys[cache.ObjectName])))
	require.False(t, ctrl.HasSynced(), "ready before the APIs know what is served")
	startAPIs(t, apis)
	require.Eventually(t, ctrl.HasSynced, waitFor, time.Millisecond, "a standby whose optional informer synced is not ready")
	require.True(t, foos.HasSynced())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the stop: Run waits for the handler
	require.Never(t, ctrl.Running, 300*time.Millisecond, time.Millisecond,
		"the workers started before On's handler saw the initial list")
	require.False(t, ctrl.HasSynced(), "the running controller is ready before On's handler saw the initial list")
	unblock()
	require.Eventually(t, ctrl.Running, waitFor, time.Millisecond, "the workers never started")
	require.True(t, ctrl.HasSynced())
}
