package multicluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 30 * time.Second

// provider hands the Fleet's Members to the test, which reports members
// itself.
type provider struct{ members chan multicluster.Members }

func newProvider() *provider { return &provider{members: make(chan multicluster.Members, 1)} }

func (p *provider) Run(ctx context.Context, m multicluster.Members) error {
	p.members <- m
	<-ctx.Done()
	return nil
}

// clusters are fake member clusters, one clientset each, found by the
// host of their config.
type clusters struct {
	mu      sync.Mutex
	clients map[string]*fake.Clientset
	built   map[string]int    // clients built per cluster
	token   map[string]string // the bearer token of the last client built per cluster
	fail    map[string]error
	// down makes every request to a cluster fail with errDown.
	down map[string]*atomic.Bool
	// hold, when set for a cluster, keeps its client from being built
	// until it is closed.
	hold map[string]chan struct{}
	// held counts, per cluster, the client builds that waited on hold.
	held map[string]int
	// seen counts, per cluster, the events its informers delivered for
	// each object (a handler of its own beside the controller's).
	seen map[multicluster.Key]int
}

var errDown = errors.New("connection refused")

func newClusters(names ...string) *clusters {
	c := &clusters{clients: map[string]*fake.Clientset{}, built: map[string]int{}, fail: map[string]error{}, down: map[string]*atomic.Bool{},
		hold: map[string]chan struct{}{}, held: map[string]int{}, seen: map[multicluster.Key]int{}}
	for _, name := range names {
		client := fake.NewClientset(configMap("app", "settings", name))
		down := &atomic.Bool{}
		// A fake's reactors cannot change while it is used: this one
		// asks the flag.
		client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, errDown
			}
			return false, nil, nil
		})
		c.clients[name], c.down[name] = client, down
	}
	return c
}

// heldBuilds returns how many client builds of name waited on its hold.
func (c *clusters) heldBuilds(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[name]
}

func (c *clusters) config(name string) *rest.Config { return &rest.Config{Host: "https://" + name} }

func (c *clusters) newClient(_ context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
	c.mu.Lock()
	hold := c.hold[name]
	if hold != nil {
		c.held[name]++
	}
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.Host != "https://"+name {
		return nil, fmt.Errorf("config of %s for %s", cfg.Host, name)
	}
	c.built[name]++
	if c.token == nil {
		c.token = map[string]string{}
	}
	c.token[name] = cfg.BearerToken
	if err := c.fail[name]; err != nil {
		return nil, err
	}
	return c.clients[name], nil
}

// saw reports how many events cluster's informers delivered for the
// object namespace/name.
func (c *clusters) saw(cluster, namespace, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[multicluster.Key{Cluster: cluster, ObjectName: cacheName(namespace, name)}]
}

// see is the informer.Queue of the handler that counts events.
func (c *clusters) see(cluster string) informer.QueueFunc[cache.ObjectName] {
	return func(name cache.ObjectName) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.seen[multicluster.Key{Cluster: cluster, ObjectName: name}]++
	}
}

// tokenOf returns the bearer token of the last client built for name.
func (c *clusters) tokenOf(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token[name]
}

func (c *clusters) builtFor(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built[name]
}

func configMap(namespace, name, cluster string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{"cluster": cluster}}
}

// member is what the tests' engage function makes of a cluster.
type member struct {
	name       string
	client     kubernetes.Interface
	configMaps listersv1.ConfigMapLister
}

// fleetUnderTest is a fleet with one controller over the ConfigMaps of
// its clusters, whose reconcile is given by the test.
type fleetUnderTest struct {
	fleet    *multicluster.Fleet[*member]
	ctrl     *queue.Controller[multicluster.Key]
	members  multicluster.Members
	clusters *clusters
	stop     func() error
}

func startFleet(t *testing.T, c *clusters, r multicluster.ReconcileFunc[*member], opts ...multicluster.Option) *fleetUnderTest {
	t.Helper()
	return startFleetWith(t, c, r, []queue.Option{queue.WithWorkers(4)}, opts...)
}

// startFleetWith is startFleet with the controller's options.
func startFleetWith(t *testing.T, c *clusters, r multicluster.ReconcileFunc[*member], queueOpts []queue.Option, opts ...multicluster.Option) *fleetUnderTest {
	t.Helper()
	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(ctx context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](c.see(cl.Name)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	opts = append([]multicluster.Option{multicluster.WithClients(c.newClient), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond)}, opts...)
	fleet, err := multicluster.New("test", p, engage, opts...)
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "configmaps", r, queueOpts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- fleet.Run(ctx) }()
	go func() { errs <- ctrl.Run(ctx) }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			for range 2 {
				select {
				case err := <-errs:
					stopErr = errors.Join(stopErr, err)
				case <-time.After(waitFor):
					stopErr = errors.Join(stopErr, errors.New("the fleet or its controller did not stop"))
				}
			}
		})
		return stopErr
	}
	t.Cleanup(func() { assert.NoError(t, stop()) })
	var m multicluster.Members
	select {
	case m = <-p.members:
	case <-time.After(waitFor):
		t.Fatal("the provider did not run")
	}
	return &fleetUnderTest{fleet: fleet, ctrl: ctrl, members: m, clusters: c, stop: stop}
}

// recorder keeps the keys reconciled, and which cluster's client each
// reconcile wrote with.
type recorder struct {
	mu   sync.Mutex
	seen map[multicluster.Key]int
	last map[multicluster.Key]*member // the cluster value of the last reconcile
}

func newRecorder() *recorder {
	return &recorder{seen: map[multicluster.Key]int{}, last: map[multicluster.Key]*member{}}
}

func (r *recorder) lastMember(k multicluster.Key) *member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[k]
}

func (r *recorder) count(k multicluster.Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[k]
}

// copyCluster writes, with the member's own client, the name of the
// cluster the reconcile was given into the ConfigMap's annotations.
func (r *recorder) copyCluster(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
	r.mu.Lock()
	r.seen[key]++
	r.last[key] = m
	r.mu.Unlock()
	cm, err := m.configMaps.ConfigMaps(key.Namespace).Get(key.Name)
	if err != nil {
		return reconcile.Result{}, nil //nolint:nilerr // deleted: nothing to do
	}
	if cm.Annotations["reconciled-for"] == key.Cluster {
		return reconcile.Result{}, nil
	}
	cm = cm.DeepCopy()
	cm.Annotations = map[string]string{"reconciled-for": key.Cluster}
	_, err = m.client.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return reconcile.Result{}, err
}

func annotation(t *testing.T, c *clusters, cluster string) string {
	cm, err := c.clients[cluster].CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Annotations["reconciled-for"]
}

func key(cluster string) multicluster.Key {
	return multicluster.Key{Cluster: cluster, ObjectName: cacheName("app", "settings")}
}

// Every member's objects are reconciled, each with its own cluster's
// client and lister.
func TestFleetReconcilesEveryCluster(t *testing.T) {
	c := newClusters("a", "b", "c")
	r := newRecorder()
	f := startFleet(t, c, r.copyCluster)
	for _, name := range []string{"a", "b", "c"} {
		f.members.Set(name, c.config(name))
	}
	f.members.Synced()
	require.Eventually(t, f.fleet.HasSynced, waitFor, time.Millisecond)
	for _, name := range []string{"a", "b", "c"} {
		assert.Eventually(t, func() bool { return annotation(t, c, name) == name }, waitFor, time.Millisecond, "cluster %s", name)
	}
	assert.Equal(t, []string{"a", "b", "c"}, f.fleet.Clusters())
	st, ok := f.fleet.Status("a")
	require.True(t, ok)
	assert.True(t, st.Ready)
	assert.NoError(t, st.Err)

	// A change in one cluster reconciles that cluster's key only.
	_, err := c.clients["c"].CoreV1().ConfigMaps("app").Create(context.Background(), configMap("app", "other", "c"), metav1.CreateOptions{})
	require.NoError(t, err)
	other := multicluster.Key{Cluster: "c", ObjectName: cacheName("app", "other")}
	assert.Eventually(t, func() bool { return r.count(other) > 0 }, waitFor, time.Millisecond)
	for _, name := range []string{"a", "b"} {
		assert.Zero(t, r.count(multicluster.Key{Cluster: name, ObjectName: other.ObjectName}), "cluster %s", name)
	}
}

// A cluster that leaves stops: its reconcile in flight is cancelled with
// ErrLeft, the cluster is not gone until that reconcile has returned, the
// key is not retried, its keys are no longer reconciled, and nothing is
// written to it afterwards.
func TestClusterLeaves(t *testing.T) {
	c := newClusters("a", "b")
	started, finish := make(chan struct{}), make(chan struct{})
	var (
		mu       sync.Mutex
		cause    error
		calls    int
		returned bool
	)
	r := func(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
		if key.Cluster != "b" {
			return reconcile.Result{}, nil
		}
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(started)
			<-ctx.Done()
			<-finish // a reconcile that takes its time to return
			mu.Lock()
			cause, returned = context.Cause(ctx), true
			mu.Unlock()
			return reconcile.Result{}, ctx.Err()
		}
		return reconcile.Result{}, nil
	}
	f := startFleet(t, c, r)
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	f.members.Synced()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("cluster b's key was not reconciled")
	}
	f.members.Delete("b")
	gone := func() bool { _, held := f.fleet.Status("b"); return !held }
	assert.Never(t, gone, 300*time.Millisecond, 10*time.Millisecond, "the cluster left before its reconcile returned")
	close(finish)
	require.Eventually(t, gone, waitFor, time.Millisecond)
	mu.Lock()
	assert.True(t, returned)
	assert.ErrorIs(t, cause, multicluster.ErrLeft)
	mu.Unlock()
	assert.Equal(t, []string{"a"}, f.fleet.Clusters())
	c.clients["b"].ClearActions()

	// A key of the cluster that left is dropped, also when added directly.
	f.ctrl.Add(key("b"))
	_, err := c.clients["b"].CoreV1().ConfigMaps("app").Create(context.Background(), configMap("app", "late", "b"), metav1.CreateOptions{})
	require.NoError(t, err)
	f.ctrl.Add(key("a"))
	require.Eventually(t, func() bool { return f.ctrl.Len() == 0 && f.ctrl.Active() == 0 }, waitFor, time.Millisecond)
	mu.Lock()
	assert.Equal(t, 1, calls, "cluster b's key was reconciled after it left")
	mu.Unlock()
	for _, a := range c.clients["b"].Actions() {
		assert.Equal(t, "create", a.GetVerb(), "only the test's own create reached cluster b: %v", a)
	}
}

// New credentials restart the cluster with them; a Set with an equal
// config does not.
func TestCredentialsChange(t *testing.T) {
	c := newClusters("a")
	r := newRecorder()
	f := startFleet(t, c, r.copyCluster)
	cfg := c.config("a")
	cfg.BearerToken = "one"
	f.members.Set("a", cfg)
	f.members.Synced()
	require.Eventually(t, func() bool { return annotation(t, c, "a") == "a" }, waitFor, time.Millisecond)
	first := r.lastMember(key("a"))
	same := c.config("a")
	same.BearerToken = "one"
	f.members.Set("a", same)
	rotated := c.config("a")
	rotated.BearerToken = "two"
	f.members.Set("a", rotated)
	require.Eventually(t, func() bool { return c.builtFor("a") == 2 }, waitFor, time.Millisecond, "a new client for the new token")
	// The restarted cluster lists its objects again and reconciles them,
	// with what engage made of it this time.
	require.Eventually(t, func() bool { return r.lastMember(key("a")) != first }, waitFor, time.Millisecond)
	assert.Equal(t, 2, c.builtFor("a"), "the equal config restarted nothing")
}

// A cluster that cannot be engaged is retried with backoff and reported,
// while the others work and the fleet counts as synced.
func TestUnreachableCluster(t *testing.T) {
	c := newClusters("a", "down")
	c.down["down"].Store(true)
	r := newRecorder()
	metrics := &fleetMetrics{}
	f := startFleet(t, c, r.copyCluster, multicluster.WithSyncTimeout(100*time.Millisecond), multicluster.WithMetrics(metrics))
	f.members.Set("a", c.config("a"))
	f.members.Set("down", c.config("down"))
	f.members.Synced()
	require.Eventually(t, func() bool { return annotation(t, c, "a") == "a" }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("down"); return st.Failures >= 2 }, waitFor, time.Millisecond)
	assert.True(t, f.fleet.HasSynced(), "an unreachable cluster keeps the fleet from syncing")
	st, held := f.fleet.Status("down")
	require.True(t, held)
	assert.False(t, st.Ready)
	assert.ErrorContains(t, st.Err, "did not sync")
	assert.GreaterOrEqual(t, metrics.failures("down"), 2)
	assert.True(t, metrics.ready("a"))

	// Once it answers, it is engaged.
	c.down["down"].Store(false)
	require.Eventually(t, func() bool { return annotation(t, c, "down") == "down" }, waitFor, time.Millisecond)
	st, _ = f.fleet.Status("down")
	assert.True(t, st.Ready)
	assert.Zero(t, st.Failures)

	// A cluster that leaves drops its series.
	f.members.Delete("down")
	require.Eventually(t, func() bool { return metrics.forgotten("down") }, waitFor, time.Millisecond)
}

type fleetMetrics struct {
	mu        sync.Mutex
	readyBy   map[string]bool
	failed    map[string]int
	forgot    map[string]bool
	reconcile map[string]int
}

func (m *fleetMetrics) SetClusterReady(_, cluster string, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readyBy == nil {
		m.readyBy = map[string]bool{}
	}
	m.readyBy[cluster] = ready
}

func (m *fleetMetrics) IncEngageFailures(_, cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed == nil {
		m.failed = map[string]int{}
	}
	m.failed[cluster]++
}

func (m *fleetMetrics) ObserveClusterReconcile(_, cluster string, _ time.Duration, _ bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reconcile == nil {
		m.reconcile = map[string]int{}
	}
	m.reconcile[cluster]++
}

func (m *fleetMetrics) ForgetCluster(_, cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forgot == nil {
		m.forgot = map[string]bool{}
	}
	m.forgot[cluster] = true
}

func (m *fleetMetrics) failures(cluster string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed[cluster]
}

func (m *fleetMetrics) ready(cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyBy[cluster]
}

func (m *fleetMetrics) forgotten(cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.forgot[cluster]
}

func TestNewValidation(t *testing.T) {
	engage := func(context.Context, *multicluster.Cluster) (int, error) { return 0, nil }
	tests := []struct {
		name    string
		fleet   string
		p       multicluster.Provider
		opts    []multicluster.Option
		wantErr string
	}{
		{name: "empty name", p: newProvider(), wantErr: "name must not be empty"},
		{name: "nil provider", fleet: "x", wantErr: "provider is nil"},
		{name: "nil metrics", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithMetrics(nil)}, wantErr: "metrics are nil"},
		{name: "nil sharding", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithSharding(nil)}, wantErr: "sharding membership is nil"},
		{name: "bad backoff", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithRetryBackoff(time.Second, time.Millisecond)}, wantErr: "0 < base <= max"},
		{name: "zero sync timeout", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithSyncTimeout(0)}, wantErr: "sync timeout must be positive"},
		{name: "nil clients", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithClients(nil)}, wantErr: "client constructor is nil"},
		{name: "negative resync", fleet: "x", p: newProvider(), opts: []multicluster.Option{multicluster.WithResync(-time.Second)}, wantErr: "resync period must not be negative"},
		{name: "defaults", fleet: "x", p: newProvider(), opts: []multicluster.Option{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := multicluster.New(tt.fleet, tt.p, engage, tt.opts...)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, f)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.fleet, f.Name())
		})
	}
}

// A cluster that stops answering is stopped and engaged again once it
// answers, reported by Status meanwhile; the others go on.
func TestClusterStopsAnswering(t *testing.T) {
	c := newClusters("a", "b")
	r := newRecorder()
	// Each probe may take as long as the interval: 20 ms was missed on a
	// loaded machine, and the member, never ready, never reconciled.
	f := startFleet(t, c, r.copyCluster, multicluster.WithProbeInterval(200*time.Millisecond), multicluster.WithSyncTimeout(time.Second))
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	f.members.Synced()
	require.Eventually(t, func() bool { return annotation(t, c, "b") == "b" }, waitFor, time.Millisecond)
	first := r.lastMember(key("b"))
	c.down["b"].Store(true)
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("b"); return !st.Ready && errors.Is(st.Err, errDown) }, waitFor, time.Millisecond)
	_, ok := f.fleet.Get("b")
	assert.False(t, ok, "a cluster that does not answer is not handed to reconciles")
	st, _ := f.fleet.Status("a")
	assert.True(t, st.Ready, "the other cluster goes on")

	c.down["b"].Store(false)
	require.Eventually(t, func() bool { return r.lastMember(key("b")) != first }, waitFor, time.Millisecond,
		"the cluster is engaged again and its keys reconciled")
	st, _ = f.fleet.Status("b")
	assert.True(t, st.Ready)
}

// A cluster with a backlog delays another cluster's first key by a turn,
// not by its backlog: the clusters share the workers fairly.
func TestClustersShareTheWorkersFairly(t *testing.T) {
	const backlog = 2000
	c := newClusters("busy", "quiet")
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		order []string
	)
	r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		<-release // the backlog builds up until the quiet cluster is ready
		mu.Lock()
		order = append(order, key.Cluster)
		mu.Unlock()
		return reconcile.Result{}, nil
	}
	f := startFleetWith(t, c, r, []queue.Option{queue.WithWorkers(1)})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the fleet stops
	f.members.Set("busy", c.config("busy"))
	f.members.Synced()
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("busy"); return st.Ready }, waitFor, time.Millisecond)
	for i := range backlog {
		f.ctrl.Add(multicluster.Key{Cluster: "busy", ObjectName: cacheName("app", fmt.Sprint("cm-", i))})
	}
	f.members.Set("quiet", c.config("quiet"))
	require.Eventually(t, func() bool { st, _ := f.fleet.Status("quiet"); return st.Ready }, waitFor, time.Millisecond)
	// Every key but the one the worker holds waits: the backlog, the busy
	// cluster's own ConfigMap and the quiet cluster's.
	require.Eventually(t, func() bool { return f.ctrl.Len() == backlog+2-1 }, waitFor, time.Millisecond, "the quiet cluster's key is queued")
	open()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == backlog+2 }, waitFor, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// The worker held a busy key; then the clusters take turns, the busy
	// one first.
	assert.Equal(t, 2, slices.Index(order, "quiet"), "busy keys reconciled before the quiet cluster's first")
}

// The fleet has synced once the provider's first list is reported and
// each of its members was tried once; a member that joins later does not
// take that back.
func TestHasSynced(t *testing.T) {
	c := newClusters("a", "b", "late")
	c.hold["b"] = make(chan struct{})
	f := startFleet(t, c, newRecorder().copyCluster)
	f.members.Set("a", c.config("a"))
	f.members.Set("b", c.config("b"))
	assert.Never(t, f.fleet.HasSynced, 100*time.Millisecond, 10*time.Millisecond, "synced before the provider's first list")
	f.members.Synced()
	assert.Never(t, f.fleet.HasSynced, 100*time.Millisecond, 10*time.Millisecond, "synced before b was tried")
	c.mu.Lock()
	c.fail["b"] = errors.New("refused")
	c.mu.Unlock()
	close(c.hold["b"])
	require.Eventually(t, f.fleet.HasSynced, waitFor, time.Millisecond, "a member that failed was tried")
	c.mu.Lock()
	late := make(chan struct{})
	c.hold["late"] = late
	c.mu.Unlock()
	defer close(late)
	f.members.Set("late", c.config("late"))
	assert.True(t, f.fleet.HasSynced())
}
