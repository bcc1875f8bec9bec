package optional_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// An aggregated API whose backend is down (discovery answers 503) holds
// back nothing but its own resource, which is taken as absent: a
// controller of Foos, whose CRD is installed and established, on the same
// APIs, starts its workers and reconciles its Foos.
func TestFailingDiscoveryLeavesCRDControllerRunning(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
	disc := newDiscovery()
	disc.set("metrics.example.com/v1", []string{"widgets"}, errors.New("the server is currently unable to handle the request"))
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), disc)
	optional.SetDiscoveryPeriod(apis, time.Hour)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	_ = optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	r := newRuns()
	ctrl, err := queue.New("foos", r)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])))
	startAPIs(t, apis)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool { return foos.State() == optional.Running }, waitFor, time.Millisecond)
	a := cache.ObjectName{Namespace: "default", Name: "a"}
	require.Eventually(t, func() bool { return r.count(a) == 1 }, 5*time.Second, 10*time.Millisecond,
		"the Foo of a served, established CRD was never reconciled while another API's discovery fails: controller HasSynced=%v, Foo Informer HasSynced=%v, APIs HasSynced=%v",
		ctrl.HasSynced(), foos.HasSynced(), apis.HasSynced())
}

// The same, run the documented way: operator.Run waits for the APIs, and
// an aggregated API whose backend is down must not make it end with
// ErrCacheSyncTimeout (a restart loop for as long as the backend is down)
// while the Foo CRD is installed and its Foos can be reconciled.
func TestFailingDiscoveryLeavesOperatorRunning(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
	disc := newDiscovery()
	disc.set("metrics.example.com/v1", []string{"widgets"}, errors.New("the server is currently unable to handle the request"))
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), disc)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	_ = optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	r := newRuns()
	ctrl, err := queue.New("foos", r)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithCacheSyncTimeout(3*time.Second), operator.WithInformers(apis), operator.WithControllers(ctrl))
	}()
	select {
	case err := <-done:
		t.Fatalf("operator.Run ended while the Foo CRD is served and only another API's discovery fails (Foos reconciled: %d): %v",
			r.count(cache.ObjectName{Namespace: "default", Name: "a"}), err)
	case <-time.After(6 * time.Second):
	}
	cancel()
	<-done
}
