package optional_test

import (
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

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// A first discovery that fails (an aggregated API's backend not up yet,
// a 503, or any other error) takes the resource as not served: the
// Informer waits and is synced, so that it holds nothing back; discovery
// is asked again sooner than the period, and the watch starts once it
// serves the group version.
func TestFailingFirstDiscoveryTakesResourceAsAbsent(t *testing.T) {
	for _, err := range []error{
		errors.New("the server is currently unable to handle the request"),
		errors.New("connection refused"),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
			disc := newDiscovery()
			disc.set("metrics.example.com/v1", []string{"widgets"}, err)
			apis := optional.NewAPIs(crdClient(), disc)
			optional.SetDiscoveryPeriod(apis, time.Hour)
			optional.SetDiscoveryRetry(apis, 5*time.Millisecond)
			widgets := optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
				return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
					dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
			}, optional.FromDiscovery())
			startAPIs(t, apis)
			require.Eventually(t, func() bool { return apis.HasSynced() && widgets.HasSynced() }, waitFor, time.Millisecond,
				"a failed discovery holds the Informer back (state %s)", widgets.State())
			require.Equal(t, optional.Waiting, widgets.State())
			// Asked again within the hour: the failure is retried sooner.
			asked(t, disc.notify, 3)

			disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
			require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, waitFor, time.Millisecond,
				"the watch did not start once discovery answered")
		})
	}
}
