package optional_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// multicluster.NewController: "The keys added for a cluster that is this
// replica's member but not ready (engaging, engaged again ...), by any
// source, are held and queued again once it is ready" (DESIGN.md: "keys
// for a member that is still engaging are held, never dropped"). With
// the documented MemberGate, whose Set runs in the engage function, a
// key added while the member engages is dropped at once, although the
// member's CRD is installed all along: the controller's Ownership says
// "held" (owned), then MemberGate.Owns finds the member's new Informer
// not running yet (its APIs start after engage returns) and refuses it.
// MemberGate's documented limitation is about a resource that is not
// served; this one is.
func TestMemberGateHoldsKeysOfAnEngagingMember(t *testing.T) {
	var provider queuetest.Provider
	provider.Set("west", &rest.Config{Host: "https://west"})
	provider.Synced()

	var mu sync.Mutex
	reconciled := map[multicluster.Key]int{}
	x := multicluster.Key{Cluster: "east", ObjectName: cache.ObjectName{Namespace: "default", Name: "x"}}
	engaging, release := make(chan struct{}), make(chan struct{})
	var ctrl *queue.Controller[multicluster.Key]
	gate := optional.NewMemberGate[*v1alpha1.Foo](func(k multicluster.Key) string { return k.Cluster }, optional.AllKeys[multicluster.Key])
	fleet, err := multicluster.New("foos", &provider, func(ctx context.Context, cl *multicluster.Cluster) (kubernetes.Interface, error) {
		apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil, optional.WithName(cl.Name))
		newInformer, _ := fooInformers(foofake.NewClientset())
		foos := optional.NewInformer(apis, foosGVR, newInformer)
		foos.AddEventHandler(ctx, informer.EnqueueHandler[*v1alpha1.Foo](cl.Queue(ctrl)))
		cl.AddInformers(apis)
		context.AfterFunc(ctx, gate.Set(cl.Name, foos))
		if cl.Name == "east" {
			close(engaging)
			<-release // east takes a moment to engage
		}
		return cl.Client, apis.Err()
	}, multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
		return fake.NewClientset(), nil
	}))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "foos", func(_ context.Context, _ kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
		mu.Lock()
		reconciled[key]++
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(gate.Watch()))
	queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl})

	provider.Set("east", &rest.Config{Host: "https://east"}) // east joins
	select {
	case <-engaging:
	case <-time.After(waitFor):
		t.Fatal("east was never engaged")
	}
	ctrl.Add(x) // a key of east from another source, while east engages
	close(release)
	require.Eventually(t, func() bool { st, ok := fleet.Status("east"); return ok && st.Ready }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reconciled[x] == 1
	}, 5*time.Second, time.Millisecond, "the key added while east engaged (its CRD installed all along) never ran once east was ready: dropped, not held")
}

// A member engaged again (new credentials) makes a new Informer, whose
// APIs decide anew: the keys added meanwhile are held by the fleet too,
// and run once the member is ready again.
func TestMemberGateHoldsKeysOfAMemberEngagedAgain(t *testing.T) {
	var provider queuetest.Provider
	provider.Synced()

	var mu sync.Mutex
	reconciled := map[multicluster.Key]int{}
	engages := 0
	x := multicluster.Key{Cluster: "east", ObjectName: cache.ObjectName{Namespace: "default", Name: "x"}}
	engaging, release := make(chan struct{}), make(chan struct{})
	var ctrl *queue.Controller[multicluster.Key]
	gate := optional.NewMemberGate[*v1alpha1.Foo](func(k multicluster.Key) string { return k.Cluster }, optional.AllKeys[multicluster.Key])
	fleet, err := multicluster.New("foos", &provider, func(ctx context.Context, cl *multicluster.Cluster) (kubernetes.Interface, error) {
		apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil, optional.WithName(cl.Name))
		newInformer, _ := fooInformers(foofake.NewClientset())
		foos := optional.NewInformer(apis, foosGVR, newInformer)
		foos.AddEventHandler(ctx, informer.EnqueueHandler[*v1alpha1.Foo](cl.Queue(ctrl)))
		cl.AddInformers(apis)
		context.AfterFunc(ctx, gate.Set(cl.Name, foos))
		mu.Lock()
		engages++
		again := engages == 2
		mu.Unlock()
		if again {
			close(engaging)
			<-release // east takes a moment to engage again
		}
		return cl.Client, apis.Err()
	}, multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
		return fake.NewClientset(), nil
	}))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "foos", func(_ context.Context, _ kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
		mu.Lock()
		reconciled[key]++
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(gate.Watch()))
	provider.Set("east", &rest.Config{Host: "https://east"})
	queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl})
	require.Eventually(t, func() bool { st, ok := fleet.Status("east"); return ok && st.Ready }, waitFor, time.Millisecond)

	provider.Set("east", &rest.Config{Host: "https://east-again"}) // new credentials: east engages again
	select {
	case <-engaging:
	case <-time.After(waitFor):
		t.Fatal("east was never engaged again")
	}
	ctrl.Add(x) // a key of east from another source, while east engages again
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reconciled[x] == 1
	}, waitFor, time.Millisecond, "the key added while east engaged again (its CRD installed all along) never ran once east was ready: dropped, not held")
}
