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
// keys run once the CRD is installed there.
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
		statesMu.Lock()
		watches[cl.Name] = foos
		statesMu.Unlock()
		return cl.Client, apis.Err()
	}, multicluster.WithClients(func(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
		return members[name].kube, nil
	}))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "foos", func(_ context.Context, _ kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		reconciled[key]++
		return reconcile.Result{}, nil
	})
	require.NoError(t, err)
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
}
