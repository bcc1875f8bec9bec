package optional_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// testLogger returns a context whose logger keeps the lines logged at
// -v=0 (errors included), and a function counting them: errors, and all.
func testLogger(t *testing.T) (context.Context, func() (errs, all int)) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0), ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	return klog.NewContext(context.Background(), logger), func() (errs, all int) {
		for _, e := range buf.Data() {
			if e.Type == ktesting.LogError {
				errs++
			}
			all++
		}
		return errs, all
	}
}

// startAPIsWithContext starts apis with ctx until stop is called or the
// test ends, and then shuts it down.
func startAPIsWithContext(t *testing.T, ctx context.Context, apis *optional.APIs) (stop func()) {
	t.Helper()
	require.NoError(t, apis.Err())
	ctx, cancel := context.WithCancel(ctx)
	apis.StartWithContext(ctx)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			apis.Shutdown()
		})
	}
	t.Cleanup(stop)
	return stop
}

// A group version that discovery reports unavailable (an aggregated API
// whose backend is down: a 503, or a group version marked stale) stops
// the watch of its resources, which starts again once discovery serves
// it; while it is unavailable, nothing is watched and nothing is logged
// but the stop.
func TestDiscoveryUnavailableStopsWatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"503", apierrors.NewServiceUnavailable("service unavailable")},
		{"stale", fmt.Errorf("listing: %w", discoveryclient.StaleGroupVersionError{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, logged := testLogger(t)
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
			disc := newDiscovery()
			disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
			m := newFakeMetrics()
			apis := optional.NewAPIs(crdClient(), disc, optional.WithMetrics(m))
			optional.SetDiscoveryPeriod(apis, 20*time.Millisecond)
			var made atomic.Int32
			widgets := optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
				made.Add(1)
				return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
					dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
			}, optional.FromDiscovery())
			stop := startAPIsWithContext(t, ctx, apis)
			defer stop()
			require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, waitFor, time.Millisecond)

			disc.set("metrics.example.com/v1", nil, tc.err)
			require.Eventually(t, func() bool { return widgets.State() == optional.Stopped }, waitFor, time.Millisecond,
				"the watch of a group version discovery reports unavailable did not stop")
			require.Eventually(t, func() bool {
				state, stops := m.state("|widgets.metrics.example.com/v1")
				return state == optional.Stopped && stops == 1
			}, waitFor, time.Millisecond, "the stop was not counted")
			// Two lines: the watch started, and stopped.
			require.Eventually(t, func() bool { _, all := logged(); return all == 2 }, waitFor, time.Millisecond)
			_, before := logged()
			drain(disc.notify)
			asked(t, disc.notify, 10)
			assert.Equal(t, optional.Stopped, widgets.State(), "an unavailable group version was watched again")
			assert.Equal(t, int32(1), made.Load(), "an informer was made while the group version was unavailable")
			errs, after := logged()
			assert.Zero(t, errs, "errors were logged while the group version was unavailable")
			assert.Equal(t, before, after, "lines were logged at -v=0 while the group version stayed unavailable")

			disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
			require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, waitFor, time.Millisecond,
				"the watch did not start again once discovery served the group version")
			assert.Equal(t, int32(2), made.Load())
		})
	}
}

// backend answers the list and watch requests of a dynamic client as an
// aggregated API does: with 503 while it is down; with an empty list and
// a watch that stays open once it is up. It counts the requests.
type backend struct {
	srv      *httptest.Server
	up       atomic.Bool
	requests atomic.Int32
	once     sync.Once
	done     chan struct{}
}

func newBackend(t *testing.T) *backend {
	b := &backend{done: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		if !b.up.Load() {
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		q := r.URL.Query()
		switch {
		case q.Get("sendInitialEvents") == "true":
			// No streaming list here: the reflector falls back to a list.
			http.Error(w, "not supported", http.StatusBadRequest)
		case q.Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-b.done:
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"apiVersion":"metrics.example.com/v1","kind":"WidgetList","metadata":{"resourceVersion":"1"},"items":[]}`))
		}
	}))
	t.Cleanup(b.close)
	return b
}

// close stops the backend, its open watches and connections; it may be
// called more than once.
func (b *backend) close() {
	b.once.Do(func() {
		close(b.done)
		b.srv.CloseClientConnections()
		b.srv.Close()
	})
}

// While the backend of an aggregated API answers 503 to the list and
// watch of its resource, although discovery still lists it (its answer
// is older, or discovery is served from elsewhere), the watch stops
// instead of listing in a loop and logging each failure; it is tried
// again after a hold-off that doubles each time it fails, so that the
// requests and log lines while the backend is down grow with the
// logarithm of the time, and it runs again once the backend is up.
func TestListUnavailableStopsWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, logged := testLogger(t)
	b := newBackend(t)
	defer b.close()
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: b.srv.URL})
	require.NoError(t, err)
	disc := newDiscovery()
	disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
	apis := optional.NewAPIs(crdClient(), disc)
	optional.SetDiscoveryPeriod(apis, 20*time.Millisecond)
	widgets := optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	stop := startAPIsWithContext(t, ctx, apis)
	defer stop()
	require.Eventually(t, func() bool { return widgets.State() == optional.Stopped }, waitFor, time.Millisecond,
		"the watch of a resource whose list answers 503 did not stop")

	// 64 periods while the backend is down: at most one attempt per
	// hold-off (1, 2, 4, 8, 16, 16, ... periods), each a few requests and
	// two lines (started, stopped).
	const periods = 64
	requests := b.requests.Load()
	drain(disc.notify)
	asked(t, disc.notify, periods)
	attempts := 8 // 1+2+4+8+16+16+16 >= 64, and one more in flight
	assert.LessOrEqual(t, int(b.requests.Load()-requests), 3*attempts, "requests while the backend is down")
	errs, all := logged()
	t.Logf("%d periods with the backend down: %d requests, %d lines", periods, b.requests.Load()-requests, all)
	assert.Zero(t, errs, "errors were logged while the backend was down")
	assert.LessOrEqual(t, all, 2*(attempts+1), "lines logged while the backend was down")

	b.up.Store(true)
	require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() }, waitFor, time.Millisecond,
		"the watch did not run again once the backend was up")
	// Stopping the informer cancels its watch request: not an error.
	stop()
	errs, _ = logged()
	assert.Zero(t, errs, "errors were logged")
}
