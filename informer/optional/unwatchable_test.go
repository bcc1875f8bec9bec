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

// docs/optional-apis.md's dynamic example follows metrics.k8s.io's pods
// with FromDiscovery ("an aggregated API such as metrics.k8s.io"), and
// the package promises "no watch-error loop". metrics-server serves pods
// and nodes with the verbs get and list only: a watch answers 405
// (MethodNotSupported), as this backend does. The Informer runs, its
// list succeeds, its watch fails, and client-go's error handler logs
// "Failed to watch" at error level and lists and watches again, backed
// off, for as long as the API is served: the watch-error loop the
// package exists to prevent, from the documented snippet.
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
	apis := optional.NewAPIs(crdClient(), disc)
	podMetrics := optional.NewInformer(apis, podMetricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, podMetricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	stop := startAPIsWithContext(t, ctx, apis)
	require.Eventually(t, func() bool { return podMetrics.State() == optional.Running && podMetrics.HasSynced() }, waitFor, time.Millisecond)
	time.Sleep(6 * time.Second)
	stop()
	errs, _ := logged()
	t.Logf("in 6s: %d lists, %d watches, %d errors logged", lists.Load(), watches.Load(), errs)
	assert.LessOrEqual(t, errs, 1, "watch errors logged in a loop for the documented pod metrics Informer (%d lists, %d watches in 6s)", lists.Load(), watches.Load())
}
