package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// a rest.Config whose Host carries a path (kcp's
// https://host/clusters/<workspace>, Rancher's /k8s/clusters/<id>, an
// API server behind a path-routing proxy) sends requests whose path does
// not start with /apis/coordination.k8s.io/. Transport's doc promises
// Lease requests are "always" untraced; with such a Host each renewal is
// a root span and carries a traceparent header.
func TestLeaseUntracedBehindAPathPrefix(t *testing.T) {
	var mu sync.Mutex
	var header, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		header, path = r.Header.Get("traceparent"), r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"op","namespace":"ns"}}`))
	}))
	defer srv.Close()
	tp, rec := newProvider(t)
	cfg := &rest.Config{Host: srv.URL + "/clusters/root:org"}
	tracing.WrapConfig(cfg, tp)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	_, err = kube.CoordinationV1().Leases("ns").Update(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ns"}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "/clusters/root:org/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", path)
	assert.Empty(t, header, "a Lease renewal carries no traceparent header")
	assert.Empty(t, rec.Ended(), "a Lease renewal makes no span")
}
