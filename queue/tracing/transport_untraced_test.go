package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// The requests of Leases, renewed every few seconds by leader election
// and shard membership, are never traced, nor the events an event
// recorder posts outside a span: each would be a trace of its own, all
// the time. Other requests made outside a span are root spans, and an
// event posted within a reconcile's span is its child.
func TestTransportLeavesLeasesAndRecordedEventsUntraced(t *testing.T) {
	var mu sync.Mutex
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		header = r.Header.Get("traceparent")
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	tp, rec := newProvider(t)
	cfg := &rest.Config{Host: srv.URL}
	tracing.WrapConfig(cfg, tp)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	for _, tc := range []struct {
		name   string
		method string
		path   string
		inSpan bool
		traced bool
	}{
		{"lease renewal", http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", false, false},
		{"lease read", http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", false, false},
		{"lease write within a span", http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", true, false},
		{"recorded event", http.MethodPost, "/api/v1/namespaces/ns/events", false, false},
		{"recorded event patch", http.MethodPatch, "/api/v1/namespaces/ns/events/foo.123", false, false},
		{"recorded event, events.k8s.io", http.MethodPost, "/apis/events.k8s.io/v1/namespaces/ns/events", false, false},
		{"event within a span", http.MethodPost, "/api/v1/namespaces/ns/events", true, true},
		{"list outside a span", http.MethodGet, "/api/v1/namespaces/ns/configmaps", false, true},
		{"configmap named events", http.MethodGet, "/api/v1/namespaces/ns/configmaps/events", false, true},
		{"namespace named events", http.MethodGet, "/api/v1/namespaces/events", false, true},
		{"configmaps of namespace events", http.MethodGet, "/api/v1/namespaces/events/configmaps", false, true},
		{"events of every namespace", http.MethodGet, "/api/v1/events", false, false},
		{"lease renewal behind a path prefix", http.MethodPut, "/clusters/root:org/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", false, false},
		{"lease renewal behind a proxy's prefix", http.MethodPut, "/k8s/clusters/c-1/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", false, false},
		{"recorded event behind a path prefix", http.MethodPost, "/clusters/root:org/api/v1/namespaces/ns/events", false, false},
		{"recorded event, events.k8s.io, behind a path prefix", http.MethodPost, "/k8s/clusters/c-1/apis/events.k8s.io/v1/namespaces/ns/events", false, false},
		{"event within a span behind a path prefix", http.MethodPost, "/clusters/root:org/api/v1/namespaces/ns/events", true, true},
		{"list behind a path prefix", http.MethodGet, "/clusters/root:org/api/v1/namespaces/ns/configmaps", false, true},
		{"write behind a prefix named api", http.MethodPost, "/api/clusters/c-1/apis/apps/v1/namespaces/ns/deployments", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.Ended())
			ctx := context.Background()
			if tc.inSpan {
				c, span := tp.Tracer("test").Start(ctx, "reconcile")
				defer span.End()
				ctx = c
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			mu.Lock()
			got := header
			mu.Unlock()
			if tc.traced {
				assert.Len(t, rec.Ended(), before+1, "a client span") // the reconcile's has not ended
				assert.NotEmpty(t, got, "the traceparent header")
				return
			}
			assert.Len(t, rec.Ended(), before, "no span")
			assert.Empty(t, got, "no traceparent header")
		})
	}
}
