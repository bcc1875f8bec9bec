package multicluster_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A member that answers every request but whose reconciles keep its
// client-side rate limiter (the QPS of its config) busy is not declared
// unreachable: the probe does not wait on that limiter.
func TestProbeBypassesTheMembersRateLimiter(t *testing.T) {
	var probes, requests atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			probes.Add(1)
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.0"}`))
			return
		}
		requests.Add(1)
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"app"}}`))
	}))
	t.Cleanup(server.Close)

	// The reconciles ask the member as fast as its limiter lets them,
	// until the test ends.
	busy := make(chan struct{})
	r := func(ctx context.Context, client kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
		for ctx.Err() == nil {
			select {
			case <-busy:
				return reconcile.Result{}, nil
			default:
			}
			_, _ = client.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		}
		return reconcile.Result{}, nil
	}
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (kubernetes.Interface, error) {
		return cl.Client, nil
	}
	const interval = 100 * time.Millisecond
	metrics := &fleetMetrics{}
	f := runFleet(t, engage, r, multicluster.WithProbeInterval(interval), multicluster.WithMetrics(metrics))
	t.Cleanup(func() { close(busy) }) // before the fleet stops
	f.members.Set("busy", &rest.Config{Host: server.URL, QPS: 5, Burst: 1})
	f.members.Synced()
	f.ready(t, "busy")
	for _, name := range []string{"a", "b", "c", "d"} {
		f.ctrl.Add(multicluster.Key{Cluster: "busy", ObjectName: cacheName("app", name)})
	}
	client, ok := f.fleet.Get("busy")
	require.True(t, ok)
	require.Eventually(t, func() bool {
		// The limiter is saturated: a request that may wait as long as
		// a probe gets no turn.
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		defer cancel()
		_, err := client.CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{})
		return err != nil && requests.Load() > 0
	}, waitFor, time.Millisecond, "the reconciles saturate the member's rate limiter")

	probed := probes.Load()
	assert.Never(t, func() bool {
		st, _ := f.fleet.Status("busy")
		return !st.Ready || st.Failures > 0 || metrics.failures("busy") > 0
	}, 20*interval, interval/4, "the busy member was declared unreachable")
	assert.Greater(t, probes.Load()-probed, int64(3), "the member was probed meanwhile")
	st, _ := f.fleet.Status("busy")
	assert.True(t, st.Ready)
	assert.NoError(t, st.Err)
}
