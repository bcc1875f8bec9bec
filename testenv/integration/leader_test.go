package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// Timings of TestLostLeaseStopsWrites: a rival takes the Lease over 2s after
// the last renewal it saw.
const (
	llLeaseDuration = 2 * time.Second
	llRenewDeadline = time.Second
	llRetryPeriod   = 250 * time.Millisecond
	llRuns          = 3
)

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLostLeaseStopsWrites holds a reconcile inside a write (the request is
// held in the client until its context ends, or until the test lets it go)
// while the leader's renewals fail, as in a network partition between the
// replica and the API server. The Lease is lost; a rival takes it over once
// it expires; only then is the held write let go. On every run, the audit
// log shows that the held write never reached the API server: losing the
// Lease cancelled it in the client, and leader.Run had returned before the
// rival took over.
func TestLostLeaseStopsWrites(t *testing.T) {
	for run := range llRuns {
		t.Run(fmt.Sprint("run ", run), func(t *testing.T) { lostLeaseRun(t, run) })
	}
}

func lostLeaseRun(t *testing.T, run int) {
	ns := newNamespace(t)
	ctx := t.Context()
	agent := func(role string) string { return fmt.Sprintf("lost-lease-%d-%s", run, role) }

	// The writer's requests to create ConfigMaps are held until their
	// context ends or release is closed.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	writerCfg := cp.Config()
	writerCfg.UserAgent = agent("writer")
	writerCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost {
				select {
				case entered <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
					return nil, r.Context().Err()
				case <-release:
				}
			}
			return rt.RoundTrip(r)
		})
	}
	writer, err := kubernetes.NewForConfig(writerCfg)
	require.NoError(t, err)

	// The elector's requests fail once partitioned is set.
	var partitioned atomic.Bool
	electorCfg := cp.Config()
	electorCfg.UserAgent = agent("elector")
	electorCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if partitioned.Load() {
				return nil, errors.New("partitioned from the API server")
			}
			return rt.RoundTrip(r)
		})
	}
	elector, err := kubernetes.NewForConfig(electorCfg)
	require.NoError(t, err)

	ctrl, err := queue.New("lost-lease", reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		_, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key}}, metav1.CreateOptions{})
		return reconcile.Result{}, err
	}), queue.WithShutdownTimeout(time.Hour)) // only the lost Lease can end the held write
	require.NoError(t, err)
	ctrl.Add("held")
	cfg := leader.Config{Client: elector, Namespace: ns, Name: "lost", Identity: "leader",
		LeaseDuration: llLeaseDuration, RenewDeadline: llRenewDeadline, RetryPeriod: llRetryPeriod}
	done := make(chan error, 1)
	var returned atomic.Pointer[time.Time]
	go func() {
		err := leader.Run(ctx, cfg, ctrl)
		now := time.Now()
		returned.Store(&now)
		done <- err
	}()
	select {
	case <-entered:
	case <-time.After(waitTimeout):
		t.Fatal("the reconcile never reached its write")
	}
	partitioned.Store(true)
	partitionedAt := time.Now()

	// A rival takes the Lease once it expires.
	rivalCfg := cp.Config()
	rivalCfg.UserAgent = agent("rival")
	rivalKube, err := kubernetes.NewForConfig(rivalCfg)
	require.NoError(t, err)
	rivalCtx, stopRival := context.WithCancel(ctx)
	defer stopRival()
	acquired := make(chan time.Time, 1)
	rival, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "lost"},
			Client:     rivalKube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "rival"},
		},
		LeaseDuration: llLeaseDuration, RenewDeadline: llRenewDeadline, RetryPeriod: llRetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { acquired <- time.Now() },
			OnStoppedLeading: func() {},
		},
	})
	require.NoError(t, err)
	rivalDone := make(chan struct{})
	go func() { defer close(rivalDone); rival.Run(rivalCtx) }()
	var rivalAt time.Time
	select {
	case rivalAt = <-acquired:
	case <-time.After(waitTimeout):
		t.Fatal("the rival never took the Lease")
	}
	close(release) // a write still held would go through now
	select {
	case err = <-done:
	case <-time.After(waitTimeout):
		t.Fatal("leader.Run did not return after the Lease was lost")
	}
	stopRival()
	<-rivalDone
	require.ErrorIs(t, err, leader.ErrLeaseLost)
	require.ErrorIs(t, err, queue.ErrAborted)
	returnedAt := *returned.Load()
	t.Logf("partitioned at 0; leader.Run returned after %s; the rival took the Lease after %s",
		returnedAt.Sub(partitionedAt).Round(time.Millisecond), rivalAt.Sub(partitionedAt).Round(time.Millisecond))
	assert.True(t, returnedAt.Before(rivalAt), "every runnable had stopped before the rival took the Lease")

	// The audit log: no ConfigMap write of the writer ever reached the API
	// server, and the rival's takeover is there.
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	byAgent := func(a string) audit.Filter { return func(e audit.Event) bool { return e.UserAgent == a } }
	writes := audit.Select(events, byAgent(agent("writer")), audit.Writes())
	assert.Empty(t, audit.Lines(writes), "no write of the lost leader reaches the API server")
	takeovers := audit.Select(events, byAgent(agent("rival")), audit.Writes(), audit.ByResource("coordination.k8s.io", "leases"), audit.Succeeded())
	assert.NotEmpty(t, takeovers, "the rival wrote the Lease")
	_, err = writer.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	assert.Error(t, err, "the held ConfigMap does not exist")
}
