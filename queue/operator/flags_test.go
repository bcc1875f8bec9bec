package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// waitFor bounds every wait for something that should happen soon.
const waitFor = 20 * time.Second

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: secret
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

func parse(t *testing.T, f Flags, args ...string) Flags {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Bind(fs)
	require.NoError(t, fs.Parse(args))
	return f
}

func TestFlagsDefaultsAndValidation(t *testing.T) {
	f := parse(t, Flags{})
	assert.Equal(t, float64(DefaultQPS), f.QPS)
	assert.Equal(t, DefaultBurst, f.Burst)
	assert.Equal(t, leader.DefaultLeaseDuration, f.LeaseDuration)
	assert.Equal(t, queue.DefaultShutdownTimeout, f.ShutdownTimeout)
	assert.Equal(t, DefaultCacheSyncTimeout, f.CacheSyncTimeout)
	assert.Equal(t, ":9443", f.WebhookAddr)
	assert.Equal(t, "/tmp/k8s-webhook-server/serving-certs", f.WebhookCertDir)
	require.NoError(t, f.Validate())
	assert.False(t, f.KeepManagedFields)
	assert.True(t, parse(t, Flags{}, "--keep-managed-fields").KeepManagedFields)

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "bad qps", args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps and --kube-api-burst must be positive"},
		{name: "bad shutdown timeout", args: []string{"--shutdown-timeout=0s"}, wantErr: "--shutdown-timeout must be positive"},
		{name: "bad cache sync timeout", args: []string{"--cache-sync-timeout=-1s"}, wantErr: "--cache-sync-timeout must be positive"},
		{name: "bad address", args: []string{"--metrics-bind-address=8080"}, wantErr: "--metrics-bind-address"},
		{name: "bad profiling address", args: []string{"--pprof-bind-address=localhost"}, wantErr: "--pprof-bind-address"},
		{name: "no lease name", args: []string{"--leader-elect"}, wantErr: "--leader-elect-id must not be empty"},
		{name: "bad lease timing", args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=1s"}, wantErr: "lease duration"},
		{name: "fractional lease duration", args: []string{"--leader-elect", "--leader-elect-id=x", "--leader-elect-lease-duration=15500ms"}, wantErr: "whole number of seconds"},
		{name: "sharded without a group", args: []string{"--sharded"}, wantErr: "--leader-elect-id must not be empty"},
		{name: "sharded and leader election", args: []string{"--sharded", "--leader-elect", "--leader-elect-id=x"}, wantErr: "exclude each other"},
		{name: "group not a label value", args: []string{"--sharded", "--leader-elect-id=foo/bar"}, wantErr: "names the shard group"},
		{name: "leader Lease not a Lease name", args: []string{"--leader-elect", "--leader-elect-id=Foo"}, wantErr: "names the Lease"},
		{name: "group with capitals", args: []string{"--sharded", "--leader-elect-id=Foo"}, wantErr: `--leader-elect-id "Foo" names the shard group`},
		{name: "group with an underscore", args: []string{"--sharded", "--leader-elect-id=foo_controller"}, wantErr: "a lowercase RFC 1123 subdomain"},
		{name: "group too long for a label", args: []string{"--sharded", "--leader-elect-id=" + strings.Repeat("a", 64)}, wantErr: "must be no more than 63"},
		{name: "sharded", args: []string{"--sharded", "--leader-elect-id=foo-controller.samplecontroller.k8s.io"}},
		{name: "disabled endpoints", args: []string{"--metrics-bind-address=0", "--health-probe-bind-address="}},
		{name: "unknown content type", args: []string{"--kube-api-content-type=application/cbor"}, wantErr: `--kube-api-content-type must be application/vnd.kubernetes.protobuf or application/json, got "application/cbor"`},
		{name: "JSON", args: []string{"--kube-api-content-type=application/json"}},
		{name: "memory limit not a quantity", args: []string{"--memory-limit=lots"}, wantErr: `--memory-limit "lots" is not a quantity of bytes`},
		{name: "negative memory limit", args: []string{"--memory-limit=-1Gi"}, wantErr: `--memory-limit "-1Gi"`},
		{name: "memory limit", args: []string{"--memory-limit=512Mi"}},
		// Regression test: 512m is 0.512 bytes, which ran with a limit of one byte.
		{name: "memory limit in thousandths of a byte", args: []string{"--memory-limit=512m"}, wantErr: `--memory-limit "512m" is 0.512 bytes, a fraction of a byte (m means thousandths); for 512 mebibytes write 512Mi`},
		{name: "memory limit below the minimum", args: []string{"--memory-limit=512k"}, wantErr: `--memory-limit "512k" is 512000 bytes, below the minimum of 1Mi`},
		{name: "memory limit at the minimum", args: []string{"--memory-limit=1Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, Flags{}, tt.args...)
			err := f.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestRESTConfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	fromFile := writeKubeconfig(t, "https://file.example:6443")
	fromEnv := writeKubeconfig(t, "https://env.example:6443")
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o755))
	require.NoError(t, os.Rename(writeKubeconfig(t, "https://home.example:6443"), filepath.Join(home, ".kube", "config")))

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantHost string
		wantErr  string
	}{
		{name: "--kubeconfig first", args: []string{"--kubeconfig=" + fromFile}, env: map[string]string{"KUBECONFIG": fromEnv}, wantHost: "https://file.example:6443"},
		{name: "then $KUBECONFIG", env: map[string]string{"KUBECONFIG": fromEnv}, wantHost: "https://env.example:6443"},
		{name: "then ~/.kube/config", env: map[string]string{"HOME": home}, wantHost: "https://home.example:6443"},
		{name: "--master overrides", args: []string{"--kubeconfig=" + fromFile, "--master=https://master.example"}, wantHost: "https://master.example"},
		{name: "--master alone", args: []string{"--master=https://master.example"}, env: map[string]string{"HOME": t.TempDir()}, wantHost: "https://master.example"},
		{name: "missing file", args: []string{"--kubeconfig=/nonexistent"}, wantErr: "loading --kubeconfig /nonexistent"},
		{name: "nothing", env: map[string]string{"HOME": t.TempDir()}, wantErr: "no cluster configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := parse(t, Flags{QPS: 7, Burst: 9}, tt.args...)
			cfg, err := f.RESTConfig("agent")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantHost, cfg.Host)
			assert.Equal(t, float32(7), cfg.QPS)
			assert.Equal(t, 9, cfg.Burst)
			assert.Equal(t, "agent", cfg.UserAgent)
		})
	}
}

func TestFlagsOptions(t *testing.T) {
	client := fake.NewClientset()
	f := parse(t, Flags{}, "--metrics-bind-address=0", "--cache-sync-timeout=1m")
	c := apply(f.Options(client))
	assert.Equal(t, time.Minute, c.cacheSyncTimeout)
	assert.Nil(t, c.election, "nothing else enabled")
	assert.Nil(t, c.sharding)
	assert.Empty(t, c.factories, "no factory made by Informers")
	assert.Empty(t, c.probeAddr+c.metricsAddr+c.pprofAddr)
	assert.Nil(t, c.metrics)
	assert.Empty(t, c.errs)
	assert.Nil(t, f.registry, "no registry made when the metrics endpoint is disabled")

	dir := t.TempDir()
	serviceAccountNamespace = filepath.Join(dir, "namespace")
	t.Cleanup(func() { serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace" })
	f = parse(t, Flags{}, "--leader-elect", "--leader-elect-id=op", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--pprof-bind-address=127.0.0.1:6060")
	c = apply(f.Options(client))
	require.NotNil(t, c.election)
	assert.Equal(t, "default", c.election.Namespace, "outside a cluster")
	assert.Equal(t, "op", c.election.Name)
	assert.Equal(t, ":8081", c.probeAddr)
	assert.Equal(t, ":8080", c.metricsAddr)
	assert.NotNil(t, c.metrics, "the metrics endpoint serves the Registry")
	assert.NotNil(t, f.registry)
	assert.Equal(t, "127.0.0.1:6060", c.pprofAddr)
	assert.Empty(t, c.errs)

	require.NoError(t, os.WriteFile(serviceAccountNamespace, []byte("ops\n"), 0o600))
	c = apply(f.Options(client))
	assert.Equal(t, "ops", c.election.Namespace, "the pod's namespace")

	strings := shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return nil }}
	f = parse(t, Flags{}, "--sharded", "--leader-elect-id=op")
	ctrl := newController(t, "c")
	require.NoError(t, Shard(&f, ctrl, client, strings))
	m := f.membership
	require.NotNil(t, m)
	assert.Regexp(t, `^op-[0-9a-f]{12}$`, m.Name())
	require.NoError(t, Shard(&f, newController(t, "d"), client, strings))
	assert.Same(t, m, f.membership, "one membership per process")
	got, err := f.Membership(client)
	require.NoError(t, err)
	assert.Same(t, m, got, "Membership returns the one Shard made")
	assert.ErrorContains(t, Shard(&f, ctrl, client, strings), "Restrict called twice", "Shard restricted the controller")
	bad := parse(t, Flags{}, "--sharded", "--leader-elect-id=op", "--leader-elect-lease-duration=1s")
	require.ErrorContains(t, Shard(&bad, newController(t, "e"), client, strings), "lease duration", "Shard reports why the membership failed")
	assert.Nil(t, bad.membership)
	_, err = bad.Membership(client)
	require.ErrorContains(t, err, "lease duration", "Membership reports why it failed")
	named := parse(t, Flags{}, "--sharded", "--leader-elect-id=op", "--identity=foo-7d9c-x2")
	nm, err := named.Membership(client)
	require.NoError(t, err)
	assert.Equal(t, shard.LeaseName("op", "foo-7d9c-x2"), nm.Name(), "--identity names the member")
	elected := parse(t, Flags{}, "--leader-elect", "--identity=foo-7d9c-x2")
	assert.Equal(t, "foo-7d9c-x2", apply(elected.Options(client)).election.Identity, "--identity names the leader candidate")
	c = apply(f.Options(client))
	assert.Same(t, m, c.sharding, "Options runs the membership")
	assert.Nil(t, c.election)
	assert.Empty(t, c.errs)
}

// apply applies opts as Run does.
func apply(opts []Option) *config {
	c := &config{}
	for _, opt := range opts {
		if opt != nil {
			opt(c)
		}
	}
	return c
}

// newController returns a controller of string keys that reconciles
// nothing.
func newController(t *testing.T, name string, opts ...queue.Option) *queue.Controller[string] {
	t.Helper()
	ctrl, err := queue.New(name, reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil }), opts...)
	require.NoError(t, err)
	return ctrl
}

// Without --sharded, Shard neither makes a membership nor restricts the
// controller, and sends no request.
func TestShardNotSharded(t *testing.T) {
	client := fake.NewClientset()
	f := parse(t, Flags{}, "--leader-elect-id=op")
	ctrl := newController(t, "c")
	keys := shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{"a"} }}
	require.NoError(t, Shard(&f, ctrl, client, keys))
	assert.Nil(t, f.membership)
	m, err := f.Membership(client)
	require.NoError(t, err)
	assert.Nil(t, m, "no membership without --sharded")
	assert.Empty(t, client.Actions(), "no request to the API server")
	assert.NoError(t, ctrl.Restrict(everything{}), "the controller was not restricted")
	assert.Empty(t, apply(f.Options(client)).errs, "Run does not ask for a Shard")
}

// everything is an Ownership that owns every key.
type everything struct{}

func (everything) Start(context.Context, queue.Enqueuer[string]) {}
func (everything) Owns(string) bool                              { return true }
func (everything) Claim(ctx context.Context, _ string) (context.Context, func(), bool) {
	return ctx, func() {}, true
}

// managedConfigMap is a ConfigMap with managedFields, as the API server
// returns it.
func managedConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}}}
}

// Informers gives its build function informer.StripManagedFields, so that
// cached objects lose their managedFields, or nil with
// --keep-managed-fields.
func TestInformersTransform(t *testing.T) {
	tests := []struct {
		name string
		args []string
		keep bool
	}{
		{name: "default: stripped"},
		{name: "--keep-managed-fields", args: []string{"--keep-managed-fields"}, keep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(managedConfigMap())
			f := parse(t, Flags{}, tt.args...)
			var given cache.TransformFunc
			factory := Informers(&f, func(transform cache.TransformFunc) informers.SharedInformerFactory {
				given = transform
				return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(transform))
			})
			require.NotNil(t, factory)
			assert.Equal(t, tt.keep, given == nil, "transform given to build")
			configMaps := factory.Core().V1().ConfigMaps()
			inf := configMaps.Informer()
			stop := make(chan struct{})
			factory.Start(stop)
			defer factory.Shutdown()
			defer close(stop)
			require.True(t, cache.WaitForCacheSync(stop, inf.HasSynced))
			cached, err := configMaps.Lister().ConfigMaps("ns").Get("a")
			require.NoError(t, err)
			if tt.keep {
				assert.Equal(t, managedConfigMap().ManagedFields, cached.ManagedFields, "managedFields kept")
			} else {
				assert.Empty(t, cached.ManagedFields, "managedFields dropped")
			}
		})
	}
}

// Run, given the options of Options, starts and stops the factories made
// by Informers, whether Options was called before or after Informers: a
// controller watching one syncs and reconciles without WithInformers.
func TestInformersStartedByOptions(t *testing.T) {
	for _, optionsFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("Options first: %v", optionsFirst), func(t *testing.T) {
			client := fake.NewClientset(managedConfigMap())
			f := parse(t, Flags{}, "--metrics-bind-address=0")
			var opts []Option
			if optionsFirst {
				opts = f.Options(client)
			}
			factory := Informers(&f, func(transform cache.TransformFunc) informers.SharedInformerFactory {
				return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(transform))
			})
			if !optionsFirst {
				opts = f.Options(client)
			}
			configMaps := factory.Core().V1().ConfigMaps()
			reconciled := make(chan cache.ObjectName, 1)
			ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
				select {
				case reconciled <- key:
				default:
				}
				return reconcile.Result{}, nil
			}), f.ControllerOptions()...)
			require.NoError(t, err)
			require.NoError(t, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Run(ctx, append(opts, WithControllers(ctrl))...) }()
			select {
			case key := <-reconciled:
				assert.Equal(t, cache.ObjectName{Namespace: "ns", Name: "a"}, key)
			case err := <-done:
				t.Fatalf("Run returned %v before the controller reconciled", err)
			case <-time.After(waitFor):
				t.Fatal("nothing reconciled: the factory made by Informers was not started")
			}
			assert.True(t, ctrl.HasSynced())
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(waitFor):
				t.Fatal("Run did not return")
			}
			assert.True(t, configMaps.Informer().IsStopped(), "Run stopped the factory")
		})
	}
}

// ControllerOptions carries --shutdown-timeout to a controller.
func TestControllerOptionsShutdownTimeout(t *testing.T) {
	f := parse(t, Flags{}, "--shutdown-timeout=50ms", "--metrics-bind-address=0")
	entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	ctrl, err := queue.New("stubborn", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		defer close(returned)
		close(entered)
		<-release // ignores its context
		return reconcile.Result{}, nil
	}), f.ControllerOptions()...)
	require.NoError(t, err)
	ctrl.Add("a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() {
		close(release)
		select {
		case <-entered:
			<-returned
		default:
		}
	}()
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("the key was not reconciled")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, queue.ErrShutdownTimeout)
		assert.ErrorContains(t, err, "waited 50ms", "the timeout of --shutdown-timeout, not the default")
	case <-time.After(waitFor):
		t.Fatal("Run did not give up on the reconcile after the shutdown timeout")
	}
}

// ControllerOptions carries the operator's metrics to a controller, whose
// reconciles then show in Registry; with --metrics-bind-address=0 it
// carries none.
func TestControllerOptionsMetrics(t *testing.T) {
	reconcileOnce := func(t *testing.T, f *Flags, name string) {
		t.Helper()
		reconciled := make(chan struct{})
		ctrl, err := queue.New(name, reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
			close(reconciled)
			return reconcile.Result{}, nil
		}), f.ControllerOptions()...)
		require.NoError(t, err)
		ctrl.Add("a")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		select {
		case <-reconciled:
		case <-time.After(waitFor):
			t.Fatal("the key was not reconciled")
		}
		cancel()
		require.NoError(t, <-done)
	}

	t.Run("enabled", func(t *testing.T) {
		f := parse(t, Flags{}, "--metrics-bind-address=:8080")
		reconcileOnce(t, &f, "metered")
		reconciles := map[string]string{"controller": "metered", "result": "success"}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			v, ok := metricValue(c, f.Registry(), "controller_runtime_reconcile_total", reconciles)
			assert.True(c, ok, "controller_runtime_reconcile_total of the controller")
			assert.Equal(c, 1.0, v)
		}, waitFor, 10*time.Millisecond)
		v, ok := metricValue(t, f.Registry(), "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "metered"})
		assert.True(t, ok)
		assert.Equal(t, 1.0, v)
		assert.Same(t, f.Metrics(), f.Metrics(), "made once")
		assert.Same(t, f.Registry(), f.Registry(), "made once")
		_, ok = metricValue(t, f.Registry(), "go_goroutines", nil)
		assert.True(t, ok, "runtime collectors on the registry")
	})

	t.Run("--metrics-bind-address=0", func(t *testing.T) {
		f := parse(t, Flags{}, "--metrics-bind-address=0")
		reconcileOnce(t, &f, "unmetered")
		assert.Nil(t, f.registry, "the controller was given no metrics")
		_, ok := metricValue(t, f.Registry(), "controller_runtime_reconcile_total", map[string]string{"controller": "unmetered"})
		assert.False(t, ok)
	})
}

// metricValue returns the value of the counter or gauge name with labels
// (a subset of the series' labels) in g, and whether there is one.
func metricValue(t require.TestingT, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	families, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// Options serves Registry, with what the operator registers on it, at
// --metrics-bind-address.
func TestOptionsServeRegistry(t *testing.T) {
	addr := freeAddr(t)
	f := parse(t, Flags{}, "--metrics-bind-address="+addr)
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "foo_widgets_total", Help: "Widgets."})
	require.NoError(t, f.Registry().Register(own))
	own.Add(3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, append(f.Options(fake.NewClientset()), WithControllers(stubController{}))...) }()
	var code int
	var body string
	require.Eventually(t, func() bool { code, body = get("http://" + addr + "/metrics"); return code != 0 }, waitFor, 5*time.Millisecond)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "foo_widgets_total 3", "the operator's own collector")
	assert.Contains(t, body, "go_goroutines", "the runtime collectors")
	cancel()
	require.NoError(t, <-done)
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// get returns the status code and body of url ("" and 0 if unreachable).
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestCheckServed(t *testing.T) {
	gv := schema.GroupVersion{Group: "samplecontroller.k8s.io", Version: "v1alpha1"}
	status := func(code int, reason string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, reason, code)
		}))
	}
	served := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"samplecontroller.k8s.io/v1alpha1","resources":[]}`))
	}))
	defer served.Close()
	notFound, denied := status(http.StatusNotFound, "NotFound"), status(http.StatusUnauthorized, "Unauthorized")
	defer notFound.Close()
	defer denied.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	require.NoError(t, CheckServed(&rest.Config{Host: served.URL}, gv))
	err = CheckServed(&rest.Config{Host: notFound.URL}, gv)
	require.ErrorIs(t, err, ErrNotServed)
	assert.ErrorContains(t, err, "does not serve samplecontroller.k8s.io/v1alpha1")
	assert.ErrorContains(t, CheckServed(&rest.Config{Host: denied.URL}, gv), "refused the credentials")
	assert.ErrorContains(t, CheckServed(&rest.Config{Host: closed}, gv), "cannot reach the API server at "+closed)
}

func TestMainExitCodes(t *testing.T) {
	main := func(args []string, run func(ctx context.Context) error, validate func() error) (int, string) {
		var stderr bytes.Buffer
		fs := flag.NewFlagSet("op", flag.ContinueOnError)
		var f Flags
		f.Bind(fs)
		return f.Main(fs, args, &stderr, run, validate), stderr.String()
	}
	ok := func(context.Context) error { return nil }
	tests := []struct {
		name     string
		args     []string
		run      func(context.Context) error
		validate func() error
		wantCode int
		wantOut  string
	}{
		{name: "success", run: ok, wantCode: 0},
		{name: "help", args: []string{"-h"}, run: ok, wantCode: 0, wantOut: "-kubeconfig"},
		{name: "unknown flag", args: []string{"--nope"}, run: ok, wantCode: 2, wantOut: "flag provided but not defined"},
		{name: "bad operator flag", args: []string{"--shutdown-timeout=0s"}, run: ok, wantCode: 2, wantOut: "op: --shutdown-timeout must be positive"},
		{name: "bad own flag", run: ok, validate: func() error { return errors.New("--workers is wrong") }, wantCode: 2, wantOut: "op: --workers is wrong"},
		{name: "klog flags", args: []string{"-v=3"}, run: ok, wantCode: 0},
		{name: "failure", run: func(context.Context) error { return errors.New("broken") }, wantCode: 1, wantOut: "op: broken\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := main(tt.args, tt.run, tt.validate)
			assert.Equal(t, tt.wantCode, code, out)
			assert.Contains(t, out, tt.wantOut)
		})
	}

	t.Run("signals", func(t *testing.T) {
		exited := make(chan int, 1)
		exit = func(code int) { exited <- code }
		t.Cleanup(func() { exit = os.Exit })
		code, out := main(nil, func(ctx context.Context) error {
			require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
			<-ctx.Done() // the first signal stops gracefully
			require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
			select {
			case code := <-exited:
				assert.Equal(t, 1, code, "the second signal exits at once")
			case <-time.After(20 * time.Second):
				t.Error("the second signal did not exit")
			}
			return nil
		}, nil)
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "second signal, exiting now")
	})
}

// With --sharded, Options and Shard may be called in either order: the
// membership runs, with the operator's metrics, and the restricted
// controller reconciles the keys it owns. Without a Shard, Run refuses to
// start.
func TestShardedOptionsInAnyOrder(t *testing.T) {
	args := []string{"--sharded", "--leader-elect-id=op", "--leader-elect-namespace=ops", "--metrics-bind-address=127.0.0.1:0",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	keys := shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{"a"} }}
	tests := []struct {
		name         string
		optionsFirst bool
	}{
		{name: "Options before Shard", optionsFirst: true},
		{name: "Shard before Options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			f := parse(t, Flags{}, args...)
			var opts []Option
			if tt.optionsFirst {
				opts = f.Options(client)
			}
			reconciled := make(chan string, 1)
			ctrl, err := queue.New("c", reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
				select {
				case reconciled <- key:
				default:
				}
				return reconcile.Result{}, nil
			}), f.ControllerOptions()...)
			require.NoError(t, err)
			require.NoError(t, Shard(&f, ctrl, client, keys))
			if !tt.optionsFirst {
				opts = f.Options(client)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Run(ctx, append(opts, WithControllers(ctrl))...) }()
			select {
			case key := <-reconciled:
				assert.Equal(t, "a", key)
			case err := <-done:
				t.Fatalf("Run returned %v before the controller reconciled its key", err)
			case <-time.After(waitFor):
				t.Fatal("the controller reconciled nothing: its membership does not run")
			}
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				members, ok := metricValue(c, f.Registry(), "ctrlkit_shard_members", map[string]string{"group": "op"})
				assert.True(c, ok, "the membership records into the operator's metrics")
				assert.Equal(c, 1.0, members)
				owned, ok := metricValue(c, f.Registry(), "ctrlkit_shard_owned_keys", map[string]string{"group": "op", "controller": "c"})
				assert.True(c, ok)
				assert.Equal(c, 1.0, owned)
			}, waitFor, 10*time.Millisecond)
			cancel()
			require.NoError(t, <-done)
		})
	}

	t.Run("no Shard", func(t *testing.T) {
		client := fake.NewClientset()
		f := parse(t, Flags{}, args...)
		// Bounded, so that a Run that wrongly starts returns too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := Run(ctx, append(f.Options(client), WithControllers(stubController{}))...)
		require.ErrorContains(t, err, "--sharded, but no controller is restricted by Shard")
	})
}

// stubController runs until its context ends.
type stubController struct{}

func (stubController) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (stubController) HasSynced() bool               { return true }

// With --sharded, an informer made sharded by shard.Informer on the
// flags' Membership syncs before the membership runs (holding nothing of
// any key yet), relists once the replica owns keys, and feeds the
// restricted controller every key, each read from the sharded cache.
func TestShardedInformerThroughRun(t *testing.T) {
	var maps []runtime.Object
	for i := range 5 {
		maps = append(maps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: fmt.Sprint("cm-", i)}})
	}
	client := fake.NewClientset(maps...)
	f := parse(t, Flags{}, "--sharded", "--leader-elect-id=op", "--leader-elect-namespace=ops", "--metrics-bind-address=0",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	factory := Informers(&f, func(transform cache.TransformFunc) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(transform))
	})
	m, err := f.Membership(client)
	require.NoError(t, err)
	api := client.CoreV1().ConfigMaps("")
	require.NoError(t, shard.Informer[*corev1.ConfigMap](m, factory.InformerFor, api.List, api.Watch, shard.ByName))
	lister := factory.Core().V1().ConfigMaps().Lister()
	var mu sync.Mutex
	seen := map[string]bool{}
	ctrl, err := queue.New("maps", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		if _, err := lister.ConfigMaps(key.Namespace).Get(key.Name); err != nil {
			return reconcile.Result{}, err
		}
		mu.Lock()
		seen[key.String()] = true
		mu.Unlock()
		return reconcile.Result{}, nil
	}), f.ControllerOptions()...)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	require.NoError(t, Shard(&f, ctrl, client, shard.ObjectNames(factory.Core().V1().ConfigMaps().TypedInformer())))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, append(f.Options(client), WithControllers(ctrl))...) }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Len(c, seen, len(maps))
	}, waitFor, 10*time.Millisecond)
	var lists int
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "configmaps" {
			lists++
		}
	}
	assert.Equal(t, 2, lists, "the first list, and the relist for the keys the replica gained")
	cancel()
	require.NoError(t, <-done)
}

// The config RESTConfig makes sends and gets built-in kinds in protobuf
// and custom resources in JSON with one server, or everything in JSON.
func TestRESTConfigContentType(t *testing.T) {
	const jsonDefault = "application/json, */*" // client-go's Accept for a JSON client
	tests := []struct {
		name string
		args []string
		// want are the Content-Type and Accept of the creates of a
		// ConfigMap and a Foo, then of their gets.
		want      []string
		wantProto bool
	}{
		{name: "protobuf by default", wantProto: true, want: []string{
			"POST /api/v1/namespaces/default/configmaps " + ContentTypeProtobuf + " " + ContentTypeProtobuf + "," + ContentTypeJSON,
			"POST /apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos " + ContentTypeJSON + " " + jsonDefault,
			"GET /api/v1/namespaces/default/configmaps/x  " + ContentTypeProtobuf + "," + ContentTypeJSON,
			"GET /apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/y  " + jsonDefault,
		}},
		{name: "JSON", args: []string{"--kube-api-content-type=application/json"}, want: []string{
			"POST /api/v1/namespaces/default/configmaps " + ContentTypeJSON + " " + ContentTypeJSON,
			"POST /apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos " + ContentTypeJSON + " " + ContentTypeJSON,
			"GET /api/v1/namespaces/default/configmaps/x  " + ContentTypeJSON,
			"GET /apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/y  " + ContentTypeJSON,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var requests []string
			var servedProto bool
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests = append(requests, strings.Join([]string{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept")}, " "))
				mu.Unlock()
				if strings.HasPrefix(r.URL.Path, "/apis/samplecontroller.k8s.io/") {
					// Custom resources are served in JSON whatever is asked.
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"y","namespace":"default"},"spec":{"deploymentName":"web"}}`)
					return
				}
				cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Data: map[string]string{"k": "v"}}
				if strings.HasPrefix(r.Header.Get("Accept"), ContentTypeProtobuf) {
					mu.Lock()
					servedProto = true
					mu.Unlock()
					w.Header().Set("Content-Type", ContentTypeProtobuf)
					require.NoError(t, protobuf.NewSerializer(kubescheme.Scheme, kubescheme.Scheme).Encode(cm, w))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				require.NoError(t, json.NewEncoder(w).Encode(cm))
			}))
			t.Cleanup(server.Close)
			f := parse(t, Flags{}, append(tt.args, "--master="+server.URL, "--kubeconfig="+writeKubeconfig(t, server.URL))...)
			require.NoError(t, f.Validate())
			cfg, err := f.RESTConfig("test")
			require.NoError(t, err)

			kube, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			foos, err := fooclientset.NewForConfig(cfg)
			require.NoError(t, err)
			_, err = kube.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = foos.SamplecontrollerV1alpha1().Foos("default").Create(t.Context(), &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: "y"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			cm, err := kube.CoreV1().ConfigMaps("default").Get(t.Context(), "x", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "v", cm.Data["k"])
			foo, err := foos.SamplecontrollerV1alpha1().Foos("default").Get(t.Context(), "y", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "web", foo.Spec.DeploymentName)

			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tt.want, requests)
			assert.Equal(t, tt.wantProto, servedProto)
		})
	}
}
