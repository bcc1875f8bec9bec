package optional_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// In a fleet, each member follows its own APIs: a member without the CRD
// is ready and waits for it, without holding back the others, and its
// keys run once the CRD is installed there. With a MemberGate, a member
// whose CRD is removed has its reconciles in flight cancelled and its
// keys dropped, while the other member's keys run.
func TestFleetMemberWithoutTheCRD(t *testing.T) {
	type member struct {
		kube *fake.Clientset
		crds *apiextensionsfake.Clientset
		foos *foofake.Clientset
	}
	members := map[string]member{
		"east": {kube: fake.NewClientset(), crds: crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), foos: foofake.NewClientset(foo("a"))},
		"west": {kube: fake.NewClientset(), crds: crdClient(), foos: foofake.NewClientset(foo("b"))},
	}
	var provider queuetest.Provider
	for name := range members {
		provider.Set(name, &rest.Config{Host: "https://" + name})
	}
	provider.Synced()

	var mu sync.Mutex
	reconciled := map[multicluster.Key]int{}
	count := func(cluster, name string) int {
		mu.Lock()
		defer mu.Unlock()
		return reconciled[multicluster.Key{Cluster: cluster, ObjectName: cache.ObjectName{Namespace: "default", Name: name}}]
	}
	var ctrl *queue.Controller[multicluster.Key]
	gate := optional.NewMemberGate[*v1alpha1.Foo](func(k multicluster.Key) string { return k.Cluster }, optional.AllKeys[multicluster.Key])
	var statesMu sync.Mutex
	watches := map[string]*optional.Informer[*v1alpha1.Foo]{}
	watch := func(cluster string) *optional.Informer[*v1alpha1.Foo] {
		statesMu.Lock()
		defer statesMu.Unlock()
		return watches[cluster]
	}
	fleet, err := multicluster.New("foos", &provider, func(ctx context.Context, cl *multicluster.Cluster) (kubernetes.Interface, error) {
		m := members[cl.Name]
		apis := optional.NewAPIs(m.crds, nil, optional.WithName(cl.Name))
		newInformer, _ := fooInformers(m.foos)
		foos := optional.NewInformer(apis, foosGVR, newInformer)
		foos.AddEventHandler(ctx, informer.EnqueueHandler[*v1alpha1.Foo](cl.Queue(ctrl)))
		cl.AddInformers(apis)
		remove := gate.Set(cl.Name, foos)
		context.AfterFunc(ctx, remove)
		statesMu.Lock()
		watches[cl.Name] = foos
		statesMu.Unlock()
		return cl.Client, apis.Err()
	}, multicluster.WithClients(func(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
		return members[name].kube, nil
	}))
	require.NoError(t, err)
	var causes []error
	ctrl, err = multicluster.NewController(fleet, "foos", func(ctx context.Context, _ kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
		mu.Lock()
		reconciled[key]++
		mu.Unlock()
		if key.Name == "held" {
			<-ctx.Done()
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			return reconcile.Result{}, context.Cause(ctx)
		}
		return reconcile.Result{}, nil
	})
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(gate.Watch()))
	queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl})

	require.Eventually(t, func() bool { return count("east", "a") == 1 }, waitFor, time.Millisecond, "the member with the CRD did not run its keys")
	for _, name := range []string{"east", "west"} {
		st, held := fleet.Status(name)
		assert.True(t, held && st.Ready, "member %s is not ready: %+v", name, st)
	}
	assert.Equal(t, optional.Running, watch("east").State())
	assert.Equal(t, optional.Waiting, watch("west").State())
	assert.Zero(t, count("west", "b"))

	_, err = members["west"].crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return count("west", "b") == 1 }, waitFor, time.Millisecond, "the member that got the CRD did not run its keys")
	assert.Equal(t, optional.Running, watch("west").State())
	assert.Equal(t, 1, count("east", "a"))

	// East's CRD goes while a reconcile of east runs: it is cancelled,
	// east's keys are dropped, west's run.
	eastHeld := multicluster.Key{Cluster: "east", ObjectName: cache.ObjectName{Namespace: "default", Name: "held"}}
	ctrl.Add(eastHeld)
	require.Eventually(t, func() bool { return count("east", "held") == 1 }, waitFor, time.Millisecond)
	require.NoError(t, members["east"].crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(causes) == 1
	}, waitFor, time.Millisecond, "the reconcile of east in flight was not cancelled")
	mu.Lock()
	assert.ErrorIs(t, causes[0], optional.ErrNotServed)
	mu.Unlock()
	ctrl.Add(multicluster.Key{Cluster: "east", ObjectName: cache.ObjectName{Namespace: "default", Name: "a"}})
	ctrl.Add(multicluster.Key{Cluster: "west", ObjectName: cache.ObjectName{Namespace: "default", Name: "b"}})
	require.Eventually(t, func() bool { return count("west", "b") == 2 }, waitFor, time.Millisecond, "west's keys stopped with east's CRD")
	assert.Equal(t, 1, count("east", "a"), "a key of east ran without its CRD")
	assert.Equal(t, 1, count("east", "held"), "the cancelled reconcile was retried")
	st, held := fleet.Status("east")
	assert.True(t, held && st.Ready, "east is not ready without its CRD: %+v", st)
}

// A MemberGate without a function naming a key's member is refused.
func TestMemberGateRefused(t *testing.T) {
	ctrl, err := queue.New("c", reconcile.Func[multicluster.Key](func(context.Context, multicluster.Key) (reconcile.Result, error) { return reconcile.Result{}, nil }))
	require.NoError(t, err)
	assert.EqualError(t, ctrl.Watch(optional.NewMemberGate[*v1alpha1.Foo, multicluster.Key](nil, nil).Watch()),
		`queue: controller "c": Watch 0: optional: NewMemberGate needs a function that names a key's member`)
}
