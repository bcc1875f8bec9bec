package multicluster_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// hungProbes records the /version requests a member's client sends while
// its API server hangs them: whether each had a deadline, and the most
// time left to it when the request left the client.
type hungProbes struct {
	mu         sync.Mutex
	sent       int
	noDeadline int
	maxLeft    time.Duration
}

func (p *hungProbes) record(r *http.Request) {
	deadline, ok := r.Context().Deadline()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent++
	if !ok {
		p.noDeadline++
		return
	}
	p.maxLeft = max(p.maxLeft, time.Until(deadline))
}

func (p *hungProbes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A member whose API server stops answering (its /version requests hang
// until the client gives up) is declared unreachable: each probe is
// abandoned within the probe interval, and three failed probes stop the
// member, which is engaged again once it answers.
func TestProbeOfAHungMember(t *testing.T) {
	const interval = 100 * time.Millisecond
	var hang atomic.Bool
	var answered atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" && hang.Load() {
			// Until the client gives up; server.Close waits for this.
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			answered.Add(1)
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.0"}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(server.Close) // after the fleet stopped

	probes := &hungProbes{}
	newClient := func(_ context.Context, _ string, cfg *rest.Config) (kubernetes.Interface, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.URL.Path == "/version" && hang.Load() {
					probes.record(r)
				}
				return rt.RoundTrip(r)
			})
		})
		return kubernetes.NewForConfig(cfg)
	}
	metrics := &fleetMetrics{}
	f := runFleet(t, clientOnly, reconcileNothing, multicluster.WithClients(newClient),
		multicluster.WithProbeInterval(interval), multicluster.WithMetrics(metrics))
	f.members.Set("hung", &rest.Config{Host: server.URL})
	f.members.Synced()
	f.ready(t, "hung")
	require.Eventually(t, func() bool { return answered.Load() > 0 }, waitFor, time.Millisecond, "the member is probed")

	hang.Store(true)
	require.Eventually(t, func() bool { return probes.count() > 0 }, waitFor, time.Millisecond, "the hung member is probed")
	probes.mu.Lock()
	noDeadline, maxLeft := probes.noDeadline, probes.maxLeft
	probes.mu.Unlock()
	require.Zero(t, noDeadline, "a probe was sent without a deadline: a hung member is never declared unreachable")
	require.LessOrEqual(t, maxLeft, interval, "a probe may take longer than the probe interval")

	require.Eventually(t, func() bool { return metrics.failures("hung") > 0 }, waitFor, time.Millisecond,
		"the hung member is declared unreachable")
	assert.GreaterOrEqual(t, probes.count(), 3, "three probes failed first")

	hang.Store(false)
	before := answered.Load()
	require.Eventually(t, func() bool {
		st, _ := f.fleet.Status("hung")
		return st.Ready && answered.Load() > before
	}, waitFor, time.Millisecond, "the member is engaged again and answers its probes")
	probes.mu.Lock()
	defer probes.mu.Unlock()
	assert.Zero(t, probes.noDeadline, "every probe has a deadline")
	assert.LessOrEqual(t, probes.maxLeft, interval, "no probe may take longer than the probe interval")
}
