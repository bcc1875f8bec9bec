package optional_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// The documented wiring, NewAPIs(crdClient, kube.Discovery()), gives a
// discovery client without a timeout (kubernetes.NewForConfig of a
// rest.Config without one): a discovery request that hangs (an aggregated
// API whose backend accepts and never answers) must not hold Shutdown,
// and so the operator's stop: the stop cancels it.
func TestHungDiscoveryDoesNotHoldShutdown(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/metrics.example.com/v1" {
			asked <- struct{}{}
			<-release
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
	apis := optional.NewAPIs(crdClient(), kube.Discovery())
	_ = optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	require.NoError(t, apis.Err())
	ctx, cancel := context.WithCancel(context.Background())
	apis.StartWithContext(ctx)
	select {
	case <-asked:
	case <-time.After(waitFor):
		t.Fatal("discovery was never asked")
	}
	cancel()
	shut := make(chan struct{})
	go func() { apis.Shutdown(); close(shut) }()
	select {
	case <-shut:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return within 10s of the stop: it waits for a discovery request that its context does not cancel and no timeout bounds")
	}
}
