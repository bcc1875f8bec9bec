package operator

import (
	"bytes"
	"context"
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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

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
	require.NoError(t, f.Validate())
	stripped, err := f.Transform()(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}})
	require.NoError(t, err)
	assert.Empty(t, stripped.(*corev1.ConfigMap).ManagedFields, "managedFields dropped by default")
	keep := parse(t, Flags{}, "--keep-managed-fields")
	assert.Nil(t, keep.Transform(), "--keep-managed-fields: no transform")

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
		{name: "sharded without a group", args: []string{"--sharded"}, wantErr: "--leader-elect-id must not be empty"},
		{name: "sharded and leader election", args: []string{"--sharded", "--leader-elect", "--leader-elect-id=x"}, wantErr: "exclude each other"},
		{name: "group not a label value", args: []string{"--sharded", "--leader-elect-id=foo/bar"}, wantErr: "names the shard group"},
		{name: "leader Lease not a Lease name", args: []string{"--leader-elect", "--leader-elect-id=Foo"}, wantErr: "names the Lease"},
		{name: "group with capitals", args: []string{"--sharded", "--leader-elect-id=Foo"}, wantErr: `--leader-elect-id "Foo" names the shard group`},
		{name: "group with an underscore", args: []string{"--sharded", "--leader-elect-id=foo_controller"}, wantErr: "a lowercase RFC 1123 subdomain"},
		{name: "group too long for a label", args: []string{"--sharded", "--leader-elect-id=" + strings.Repeat("a", 64)}, wantErr: "must be no more than 63"},
		{name: "sharded", args: []string{"--sharded", "--leader-elect-id=foo-controller.samplecontroller.k8s.io"}},
		{name: "disabled endpoints", args: []string{"--metrics-bind-address=0", "--health-probe-bind-address="}},
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
	var c config
	for _, opt := range f.Options(client, http.NotFoundHandler()) {
		opt(&c)
	}
	assert.Equal(t, time.Minute, c.cacheSyncTimeout)
	assert.Nil(t, c.election, "nothing else enabled")
	assert.Nil(t, c.sharding)
	assert.Empty(t, c.probeAddr+c.metricsAddr+c.pprofAddr)
	assert.Empty(t, c.errs)

	dir := t.TempDir()
	serviceAccountNamespace = filepath.Join(dir, "namespace")
	t.Cleanup(func() { serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace" })
	f = parse(t, Flags{}, "--leader-elect", "--leader-elect-id=op", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--pprof-bind-address=127.0.0.1:6060")
	c = config{}
	for _, opt := range f.Options(client, http.NotFoundHandler()) {
		opt(&c)
	}
	require.NotNil(t, c.election)
	assert.Equal(t, "default", c.election.Namespace, "outside a cluster")
	assert.Equal(t, "op", c.election.Name)
	assert.Equal(t, ":8081", c.probeAddr)
	assert.Equal(t, ":8080", c.metricsAddr)
	assert.Equal(t, "127.0.0.1:6060", c.pprofAddr)

	require.NoError(t, os.WriteFile(serviceAccountNamespace, []byte("ops\n"), 0o600))
	c = config{}
	for _, opt := range f.Options(client, nil) {
		opt(&c)
	}
	assert.Equal(t, "ops", c.election.Namespace, "the pod's namespace")
	assert.Empty(t, c.metricsAddr, "no handler, no endpoint")

	strings := shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return nil }}
	assert.Nil(t, ShardGate(&f, client, nil, strings), "not sharded")
	f = parse(t, Flags{}, "--sharded", "--leader-elect-id=op")
	newController := func(opt queue.Option) error {
		_, err := queue.New("c", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil }), opt)
		return err
	}
	require.NoError(t, newController(ShardGate(&f, client, nil, strings)), "the option fits a controller of the same keys")
	m := f.membership
	require.NotNil(t, m)
	require.NoError(t, newController(ShardGate(&f, client, nil, strings)))
	assert.Same(t, m, f.membership, "one membership per process")
	bad := parse(t, Flags{}, "--sharded", "--leader-elect-id=op", "--leader-elect-lease-duration=1s")
	require.ErrorContains(t, newController(ShardGate(&bad, client, nil, strings)), "lease duration", "queue.New reports why the membership failed")
	assert.Regexp(t, `^op-[0-9a-f]{12}$`, m.Name())
	c = config{}
	for _, opt := range f.Options(client, nil) {
		opt(&c)
	}
	assert.Same(t, m, c.sharding, "Options runs the membership")
	assert.Nil(t, c.election)
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

// With --sharded, Options and ShardGate may be called in either order: the
// membership runs, and the gated controller reconciles the keys it owns.
// Without a ShardGate, Run refuses to start.
func TestShardedOptionsInAnyOrder(t *testing.T) {
	args := []string{"--sharded", "--leader-elect-id=op", "--leader-elect-namespace=ops",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	keys := shard.Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{"a"} }}
	tests := []struct {
		name         string
		optionsFirst bool
	}{
		{name: "Options before ShardGate", optionsFirst: true},
		{name: "ShardGate before Options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			f := parse(t, Flags{}, args...)
			var opts []Option
			if tt.optionsFirst {
				opts = f.Options(client, nil)
			}
			reconciled := make(chan string, 1)
			ctrl, err := queue.New("c", reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
				select {
				case reconciled <- key:
				default:
				}
				return reconcile.Result{}, nil
			}), ShardGate(&f, client, nil, keys))
			require.NoError(t, err)
			if !tt.optionsFirst {
				opts = f.Options(client, nil)
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
			case <-time.After(20 * time.Second):
				t.Fatal("the controller reconciled nothing: its membership does not run")
			}
			cancel()
			require.NoError(t, <-done)
		})
	}

	t.Run("no ShardGate", func(t *testing.T) {
		client := fake.NewClientset()
		f := parse(t, Flags{}, args...)
		// Bounded, so that a Run that wrongly starts returns too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := Run(ctx, append(f.Options(client, nil), WithControllers(stubController{}))...)
		require.ErrorContains(t, err, "no controller is restricted by a ShardGate")
	})
}

// stubController runs until its context ends.
type stubController struct{}

func (stubController) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (stubController) HasSynced() bool               { return true }
