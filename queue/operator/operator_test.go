package operator_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 20 * time.Second

// The helpers of the package's internal tests.
var (
	freeAddr = operator.FreeAddr
	get      = operator.Get
)

// journal records the order of events from several goroutines.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// loggedFactory notes when its informers are shut down.
type loggedFactory struct {
	informers.SharedInformerFactory
	j *journal
}

func (f loggedFactory) Shutdown() {
	f.SharedInformerFactory.Shutdown()
	f.j.add("informers stopped")
}

// A whole operator over a fake clientset: a ConfigMap controller on a
// shared factory, probes and metrics; a stop stops the controller, then the
// informers, then the servers.
func TestRun(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	j := &journal{}
	factory := loggedFactory{SharedInformerFactory: informers.NewSharedInformerFactory(client, 0), j: j}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithRuntimeCollectors())
	require.NoError(t, err)
	handler := metrics.Handler(reg)

	probes, metricsAddr := freeAddr(t), freeAddr(t)
	reconciled := make(chan struct{}, 1)
	release := make(chan struct{})
	ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		reconciled <- struct{}{}
		<-release // drains only when told, to see the servers stay up
		return reconcile.Result{}, nil
	}), queue.WithMetrics(m))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx,
			operator.WithInformers(factory),
			operator.WithControllers(journaled{ctrl, j}),
			operator.WithProbes(probes),
			operator.WithMetrics(metricsAddr, handler),
			operator.WithProfiling(metricsAddr),
			operator.WithReadyCheck("custom", func(*http.Request) error { return nil }),
			nil)
	}()
	<-reconciled
	require.Eventually(t, func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK }, waitFor, 5*time.Millisecond)
	code, body := get("http://" + probes + "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = get("http://" + metricsAddr + "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `controller_runtime_reconcile_total{controller="configmaps",result="success"}`)
	assert.Contains(t, body, "go_goroutines", "runtime collectors")
	code, body = get("http://" + metricsAddr + "/debug/pprof/heap?debug=1")
	assert.Equal(t, http.StatusOK, code, "profiles beside the metrics")
	assert.Contains(t, body, "# HeapAlloc = ", "a heap profile")
	code, _ = get("http://" + probes + "/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code, "profiles only where asked for")

	cancel()
	// While the controller drains, the servers still answer.
	code, _ = get("http://" + probes + "/healthz")
	assert.Equal(t, http.StatusOK, code, "probes answer while the controller drains")
	close(release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
	assert.Equal(t, []string{"controller stopped", "informers stopped"}, j.list())
	code, _ = get("http://" + probes + "/healthz")
	assert.Zero(t, code, "the servers are stopped")
}

// journaled notes when a controller's Run returns.
type journaled struct {
	*queue.Controller[cache.ObjectName]
	j *journal
}

func (c journaled) Run(ctx context.Context) error {
	defer c.j.add("controller stopped")
	return c.Controller.Run(ctx)
}

// stub is a Controller whose Run and HasSynced are given.
type stub struct {
	name   string
	run    func(ctx context.Context) error
	synced bool
}

func (s stub) Run(ctx context.Context) error { return s.run(ctx) }
func (s stub) HasSynced() bool               { return s.synced }
func (s stub) Name() string                  { return s.name }

func untilDone(ctx context.Context) error { <-ctx.Done(); return nil }

func TestFirstErrorStopsAll(t *testing.T) {
	boom := errors.New("boom")
	var otherStopped bool
	err := operator.Run(context.Background(), operator.WithControllers(
		stub{run: func(context.Context) error { return boom }},
		stub{run: func(ctx context.Context) error { <-ctx.Done(); otherStopped = true; return nil }},
	))
	require.ErrorIs(t, err, boom)
	assert.True(t, otherStopped)
}

func TestReadinessReportsWhatIsMissing(t *testing.T) {
	probes := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithProbes(probes), operator.WithControllers(
			stub{name: "lagging", run: untilDone},
			stub{name: "fine", run: untilDone, synced: true},
		), operator.WithReadyCheck("database", func(*http.Request) error { return errors.New("unreachable") }))
	}()
	var code int
	var body string
	require.Eventually(t, func() bool { code, body = get("http://" + probes + "/readyz"); return code != 0 }, waitFor, 5*time.Millisecond)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "controller lagging has not synced\ndatabase: unreachable\n", body)
	cancel()
	require.NoError(t, <-done)
}

func TestListenFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ran := false
	err = operator.Run(context.Background(), operator.WithProbes(freeAddr(t)), operator.WithMetrics(ln.Addr().String(), http.NotFoundHandler()),
		operator.WithControllers(stub{run: func(context.Context) error { ran = true; return nil }}))
	require.ErrorContains(t, err, "listening on "+ln.Addr().String())
	assert.False(t, ran, "nothing runs when an endpoint cannot listen")
}

func TestRunValidation(t *testing.T) {
	ok := stub{run: untilDone}
	tests := []struct {
		name    string
		opts    []operator.Option
		wantErr string
	}{
		{name: "no controller", wantErr: "no controller to run"},
		{name: "nil controller", opts: []operator.Option{operator.WithControllers(nil, ok)}, wantErr: "controller is nil"},
		{name: "nil factory", opts: []operator.Option{operator.WithControllers(ok), operator.WithInformers(nil)}, wantErr: "informer factory is nil"},
		{name: "nil metrics handler", opts: []operator.Option{operator.WithControllers(ok), operator.WithMetrics(":0", nil)}, wantErr: "metrics handler is nil"},
		{name: "bad ready check", opts: []operator.Option{operator.WithControllers(ok), operator.WithReadyCheck("", nil)}, wantErr: "ready check needs"},
		{name: "leader readiness without election", opts: []operator.Option{operator.WithControllers(ok), operator.WithReadinessOnlyWhenLeading()},
			wantErr: "needs leader election"},
		{name: "bad cache sync timeout", opts: []operator.Option{operator.WithControllers(ok), operator.WithCacheSyncTimeout(0)}, wantErr: "cache sync timeout must be positive"},
		{name: "nil membership", opts: []operator.Option{operator.WithControllers(ok), operator.WithSharding(nil)}, wantErr: "membership is nil"},
		{name: "sharding and leader election", opts: []operator.Option{operator.WithControllers(ok), operator.WithSharding(testMembership(t, fake.NewClientset())),
			operator.WithLeaderElection(leader.Config{Client: fake.NewClientset(), Namespace: "ops", Name: "op"})}, wantErr: "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, operator.Run(context.Background(), tt.opts...), tt.wantErr)
		})
	}
}

// With leader election, a standby replica keeps its informers synced and
// runs no controller; with WithReadinessOnlyWhenLeading it is not ready.
func TestStandby(t *testing.T) {
	other := "other"
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}, AcquireTime: &metav1.MicroTime{Time: time.Now()}},
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	cms := factory.Core().V1().ConfigMaps().Informer()
	probes := freeAddr(t)
	ran := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(factory), operator.WithProbes(probes),
			operator.WithLeaderElection(leader.Config{Client: client, Namespace: "ops", Name: "op", Identity: "me"}),
			operator.WithReadinessOnlyWhenLeading(),
			operator.WithControllers(stub{name: "c", synced: true, run: func(ctx context.Context) error { close(ran); return nil }}))
	}()
	require.Eventually(t, cms.HasSynced, waitFor, time.Millisecond, "the standby's informers run")
	var code int
	var body string
	require.Eventually(t, func() bool { code, body = get("http://" + probes + "/readyz"); return code != 0 }, waitFor, 5*time.Millisecond)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not leading\n", body)
	cancel()
	require.NoError(t, <-done)
	select {
	case <-ran:
		t.Fatal("a standby ran its controller")
	default:
	}
}

// Once leading, the replica is ready and runs its controllers.
func TestLeading(t *testing.T) {
	client := fake.NewClientset()
	probes := freeAddr(t)
	running := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithProbes(probes), operator.WithReadinessOnlyWhenLeading(),
			operator.WithLeaderElection(leader.Config{Client: client, Namespace: "ops", Name: "op", Identity: "me",
				LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}),
			operator.WithControllers(stub{name: "c", synced: true, run: func(ctx context.Context) error { close(running); return untilDone(ctx) }}))
	}()
	<-running
	require.Eventually(t, func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK }, waitFor, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func testMembership(t *testing.T, client *fake.Clientset) *shard.Membership {
	t.Helper()
	m, err := shard.New(shard.Config{Client: client, Namespace: "ops", Group: "op", Identity: "me",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
	require.NoError(t, err)
	return m
}

// A sharded replica is ready once its membership owns keys; its
// controllers stop before the membership, which then deletes its Lease.
func TestSharded(t *testing.T) {
	client := fake.NewClientset()
	m := testMembership(t, client)
	probes := freeAddr(t)
	running := make(chan struct{})
	var leaseAtStop atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithProbes(probes), operator.WithSharding(m),
			operator.WithControllers(stub{name: "c", synced: true, run: func(ctx context.Context) error {
				close(running)
				err := untilDone(ctx)
				_, getErr := client.CoordinationV1().Leases("ops").Get(context.Background(), m.Name(), metav1.GetOptions{})
				leaseAtStop.Store(getErr == nil)
				return err
			}}))
	}()
	<-running
	require.Eventually(t, func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK }, waitFor, 5*time.Millisecond)
	assert.True(t, m.HasSynced())
	cancel()
	require.NoError(t, <-done)
	assert.True(t, leaseAtStop.Load(), "the membership outlives the controllers")
	_, err := client.CoordinationV1().Leases("ops").Get(context.Background(), m.Name(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Lease is deleted after the stop, got %v", err)
}

// client-go's factories are what WithInformers takes.
var _ informer.Factory = informers.NewSharedInformerFactory(fake.NewClientset(), 0)

// syncFailure is a factory whose caches never sync.
type syncFailure struct {
	informers.SharedInformerFactory
}

func (syncFailure) Start(<-chan struct{})            {}
func (syncFailure) StartWithContext(context.Context) {}
func (syncFailure) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	<-stop
	return map[reflect.Type]bool{reflect.TypeFor[*corev1.ConfigMap](): false}
}
func (syncFailure) Shutdown() {}

func TestStopBeforeSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(syncFailure{}),
			operator.WithControllers(stub{run: func(context.Context) error { ran = true; return nil }}))
	}()
	cancel()
	require.NoError(t, <-done)
	assert.False(t, ran, "controllers start only once the caches synced")
}

func ExampleRun() {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
	kubeInformers := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		fmt.Println("reconciled", key)
		cancel() // one is enough for the example
		return reconcile.Result{}, nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctrl.Watch(queue.On(kubeInformers.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))); err != nil {
		fmt.Println(err)
		return
	}
	err = operator.Run(ctx,
		operator.WithInformers(kubeInformers),
		operator.WithControllers(ctrl),
		operator.WithProbes("127.0.0.1:0"),
	)
	fmt.Println("stopped:", err)
	// Output:
	// reconciled default/settings
	// stopped: <nil>
}

// heldFactory is a factory whose caches never sync and whose Shutdown
// waits for release, to hold Run while it stops.
type heldFactory struct {
	syncFailure
	release chan struct{}
}

func (f heldFactory) Shutdown() { <-f.release }

// Informers or controllers that do not sync within the cache sync timeout
// stop Run with an error naming them; /healthz fails meanwhile.
func TestCacheSyncTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	lagging := func(release chan struct{}) operator.Controller {
		return stub{name: "lagging", run: func(ctx context.Context) error {
			<-ctx.Done()
			<-release
			return nil
		}}
	}
	synced := stub{name: "fine", synced: true, run: untilDone}
	tests := []struct {
		name string
		opts func(release chan struct{}) []operator.Option
		want string
	}{
		{name: "informers", opts: func(release chan struct{}) []operator.Option {
			return []operator.Option{operator.WithInformers(heldFactory{release: release}), operator.WithControllers(synced)}
		}, want: "informers of *v1.ConfigMap did not sync within 50ms"},
		{name: "controllers", opts: func(release chan struct{}) []operator.Option {
			return []operator.Option{operator.WithControllers(synced, lagging(release))}
		}, want: "controllers lagging did not sync within 50ms"},
		{name: "controllers of the leader", opts: func(release chan struct{}) []operator.Option {
			return []operator.Option{operator.WithControllers(lagging(release), synced),
				operator.WithLeaderElection(leader.Config{Client: fake.NewClientset(), Namespace: "ops", Name: "op", Identity: "me",
					LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond})}
		}, want: "controllers lagging did not sync within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probes := freeAddr(t)
			release := make(chan struct{})
			let := sync.OnceFunc(func() { close(release) })
			t.Cleanup(let)
			done := make(chan error, 1)
			go func() {
				done <- operator.Run(context.Background(), append(tt.opts(release),
					operator.WithProbes(probes), operator.WithCacheSyncTimeout(timeout))...)
			}()
			var body string
			require.Eventually(t, func() bool {
				var code int
				code, body = get("http://" + probes + "/healthz")
				return code == http.StatusInternalServerError
			}, waitFor, 5*time.Millisecond, "/healthz fails once the timeout expired")
			assert.Contains(t, body, tt.want)
			let()
			select {
			case err := <-done:
				require.ErrorIs(t, err, operator.ErrCacheSyncTimeout)
				assert.ErrorContains(t, err, tt.want)
			case <-time.After(waitFor):
				t.Fatal("Run did not return after the cache sync timeout")
			}
		})
	}
}
