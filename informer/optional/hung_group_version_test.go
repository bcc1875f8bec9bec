package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// oneHungGroupVersion is discovery where one group version's requests
// hang (an aggregated API whose backend accepts and never answers) until
// their context ends; the others answer at once.
type oneHungGroupVersion struct {
	*discovery
	hung string
}

func (d *oneHungGroupVersion) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

func (d *oneHungGroupVersion) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	if gv == d.hung {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// Informer.HasSynced: "It depends on its own resource only: another
// resource whose discovery fails or hangs does not hold it back";
// docs/optional-apis.md: "an aggregated API whose backend is down holds
// back neither the controllers of other resources nor operator.Run's
// wait for the caches". discoverEvery asks the group versions one after
// the other: a hung request of one (declared first) holds the first
// answer about every other for DiscoveryTimeout (30s), and each of its
// retries (1s, 2s, 4s, ... later) holds their next answers as long.
func TestHungGroupVersionHoldsBackNoOtherGroupVersion(t *testing.T) {
	hungGVR := schema.GroupVersionResource{Group: "hung.example.com", Version: "v1", Resource: "gadgets"}
	disc := &oneHungGroupVersion{discovery: newDiscovery(), hung: "hung.example.com/v1"}
	disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList", hungGVR: "GadgetList"})
	apis := optional.NewAPIs(crdClient(), disc)
	dynInformer := func(gvr schema.GroupVersionResource) func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
			return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
				dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, "", 0, cache.Indexers{}, nil).Informer())
		}
	}
	_ = optional.NewInformer(apis, hungGVR, dynInformer(hungGVR), optional.FromDiscovery())
	widgets := optional.NewInformer(apis, metricsGVR, dynInformer(metricsGVR), optional.FromDiscovery())
	startAPIs(t, apis)

	require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, 5*time.Second, time.Millisecond,
		"the Informer of a group version discovery answers at once was not synced (state %s) within 5s: another group version's hung discovery request holds it back", widgets.State())
}
