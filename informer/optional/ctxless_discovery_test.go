package optional_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// plainHungDiscovery is a discovery.DiscoveryInterface (what NewAPIs
// takes) without the ...WithContext methods, such as an instrumented or
// rate-limited wrapper a user writes: client-go's
// ToDiscoveryInterfaceWithContext wraps it and drops the context. Its
// requests for one group version hang until released.
type plainHungDiscovery struct {
	clientdiscovery.DiscoveryInterface
	entered chan struct{}
	release chan struct{}
}

func (d *plainHungDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	select {
	case d.entered <- struct{}{}:
	default:
	}
	<-d.release
	return nil, context.Canceled
}

// docs/optional-apis.md: "a discovery request that hangs (up to
// optional.DiscoveryTimeout, thirty seconds, whatever the discovery
// client's own timeout) ...; the stop cancels a request in flight, so
// Shutdown does not wait for it" (and APIs.Shutdown's doc: "a discovery
// request in flight is cancelled by the end of Start's context"). NewAPIs
// takes any discovery.DiscoveryInterface; with one that does not
// implement the ...WithContext methods, the group version's goroutine
// (one per group version now) stays blocked in the request: neither
// DiscoveryTimeout nor the stop ends it, and Shutdown waits for it.
func TestShutdownDoesNotWaitForAHungContextlessDiscoveryRequest(t *testing.T) {
	hungGVR := schema.GroupVersionResource{Group: "hung.example.com", Version: "v1", Resource: "gadgets"}
	disc := &plainHungDiscovery{DiscoveryInterface: newDiscovery(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(disc.release) })
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{hungGVR: "GadgetList"})
	apis := optional.NewAPIs(crdClient(), disc)
	_ = optional.NewInformer(apis, hungGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, hungGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	ctx, cancel := context.WithCancel(context.Background())
	apis.StartWithContext(ctx)
	select {
	case <-disc.entered:
	case <-time.After(waitFor):
		cancel()
		t.Fatal("discovery was never asked")
	}
	cancel()
	done := make(chan struct{})
	go func() { apis.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown still waits 5s after the stop: the discovery request in flight (a client without ...WithContext) was not cancelled, its group version's goroutine is still blocked")
	}
}
