package optional_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// metrics-server serves metrics.k8s.io's pods and nodes with the verbs
// get and list only: a watch answers 405 (MethodNotSupported), as this
// backend does. An Informer of such a resource, followed by discovery,
// would list, fail to watch, log client-go's "Failed to watch" at error
// level, and list and watch again for as long as the API is served: the
// watch-error loop the package exists to prevent. Discovery's verbs say
// it cannot be watched: it is taken as not served (the Informer waits,
// synced), logged once, and never listed nor watched.
func TestUnwatchableResourceLogsNoWatchErrorLoop(t *testing.T) {
	ctx, logged := testLogger(t)
	podMetricsGVR := schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
	var lists, watches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			watches.Add(1)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","code":405}`))
			return
		}
		lists.Add(1)
		_, _ = w.Write([]byte(`{"apiVersion":"metrics.k8s.io/v1beta1","kind":"PodMetricsList","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	t.Cleanup(srv.Close)
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	disc := newDiscovery()
	disc.set("metrics.k8s.io/v1beta1", []string{"pods", "nodes"}, nil)
	for i := range disc.lists["metrics.k8s.io/v1beta1"].APIResources {
		disc.lists["metrics.k8s.io/v1beta1"].APIResources[i].Verbs = []string{"get", "list"} // as metrics-server serves them
	}
	apis := optional.NewAPIs(crdClient(), disc, optional.WithDiscoveryPeriod(optional.MinDiscoveryPeriod))
	podMetrics := optional.NewInformer(apis, podMetricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, podMetricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	stop := startAPIsWithContext(t, ctx, apis)
	require.Eventually(t, podMetrics.HasSynced, waitFor, time.Millisecond)
	require.Equal(t, optional.Waiting, podMetrics.State(), "a resource that cannot be watched is not served")
	time.Sleep(6 * time.Second) // more than a discovery period: discovery answers again
	stop()
	errs, all := logged()
	t.Logf("in 6s: %d lists, %d watches, %d errors and %d lines logged", lists.Load(), watches.Load(), errs, all)
	assert.LessOrEqual(t, errs, 1, "watch errors logged in a loop for the pod metrics Informer (%d lists, %d watches in 6s)", lists.Load(), watches.Load())
	assert.Zero(t, lists.Load()+watches.Load(), "a resource that cannot be watched was listed or watched")
	assert.Equal(t, 1, all, "a resource that cannot be watched is logged once")
}
