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
// a 503) leaves the APIs (and the operator's readiness) not synced: the
// resource is not taken as absent before discovery answered.
func TestNotSyncedBeforeDiscoveryAnswered(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
	disc := newDiscovery()
	disc.set("metrics.example.com/v1", []string{"widgets"}, errors.New("the server is currently unable to handle the request"))
	apis := optional.NewAPIs(crdClient(), disc)
	optional.SetDiscoveryPeriod(apis, time.Hour)
	widgets := optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	startAPIs(t, apis)
	asked(t, disc.notify, 1)
	require.Never(t, apis.HasSynced, 200*time.Millisecond, 5*time.Millisecond, "APIs report synced although discovery never answered (Informer state %s)", widgets.State())
	require.False(t, widgets.HasSynced(), "the Informer reports synced although discovery never answered")
}
