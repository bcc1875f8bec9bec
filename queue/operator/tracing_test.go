package operator

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// clearOTelEnv unsets the OTEL_* variables the flags read.
func clearOTelEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SERVICE_NAME",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

func TestTracingFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		enabled   bool
		ratio     float64
		invalid   string
		wantError bool
	}{
		{name: "off by default", ratio: 1},
		{name: "--tracing-endpoint", args: []string{"--tracing-endpoint=http://collector:4318"}, enabled: true, ratio: 1},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, enabled: true, ratio: 1},
		{name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, enabled: true, ratio: 1},
		{name: "OTEL_SDK_DISABLED wins", args: []string{"--tracing-endpoint=http://collector:4318"}, env: map[string]string{"OTEL_SDK_DISABLED": "true"}, ratio: 1},
		{name: "OTEL_TRACES_EXPORTER=none wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, ratio: 1},
		{name: "ratio from OTEL_TRACES_SAMPLER_ARG", env: map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, ratio: 0.25},
		{name: "always_off", env: map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, ratio: 0},
		{name: "the flag wins over the environment", args: []string{"--tracing-sampling-ratio=0.5"}, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_SAMPLER": "always_off"}, enabled: true, ratio: 0.5},
		{name: "endpoint without scheme", args: []string{"--tracing-endpoint=collector:4318"}, ratio: 1, enabled: true, invalid: "must be an http:// or https:// URL"},
		{name: "ratio above 1", args: []string{"--tracing-sampling-ratio=2"}, ratio: 2, invalid: "--tracing-sampling-ratio must be between 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := parse(t, Flags{}, tt.args...)
			assert.Equal(t, tt.enabled, f.TracingEnabled())
			assert.Equal(t, tt.ratio, f.TracingSamplingRatio)
			if tt.invalid != "" {
				assert.ErrorContains(t, f.Validate(), tt.invalid)
				return
			}
			require.NoError(t, f.Validate())
			tp, err := f.TracerProvider()
			require.NoError(t, err)
			assert.Equal(t, tt.enabled, tp != nil)
			if f.tracer != nil {
				defer func() { _ = f.tracer.Shutdown(context.Background()) }()
			}
			ctrl, err := queue.New("c", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil }), f.ControllerOptions()...)
			require.NoError(t, err)
			assert.Equal(t, tt.enabled, ctrl.Tracing(), "ControllerOptions carry the tracer")
			t.Setenv("KUBECONFIG", "")
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			f.Master = "https://master.example"
			t.Setenv("HOME", t.TempDir())
			cfg, err := f.RESTConfig("agent")
			require.NoError(t, err)
			assert.Equal(t, tt.enabled, cfg.WrapTransport != nil, "RESTConfig's transport is traced")
		})
	}
}

func TestTracingURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":            "http://c:4318/v1/traces",
		"http://c:4318/":           "http://c:4318/v1/traces",
		"https://c/otlp/v1/traces": "https://c/otlp/v1/traces",
		"https://c/otlp":           "https://c/otlp/v1/traces",
		"https://c/otlp/":          "https://c/otlp/v1/traces",
	} {
		got, err := tracingURL(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// An operator run with --tracing-endpoint exports the spans of its
// reconciles over OTLP/HTTP, and Run flushes them when it stops.
func TestTracingExportedAndFlushedByRun(t *testing.T) {
	clearOTelEnv(t)
	var mu sync.Mutex
	var posts []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts = append(posts, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	f := parse(t, Flags{}, "--tracing-endpoint="+collector.URL)
	require.NoError(t, f.Validate())

	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		cancel()
		return reconcile.Result{}, nil
	}), f.ControllerOptions()...)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	require.NoError(t, Run(ctx, append(f.Options(client), WithInformers(factory), WithControllers(ctrl))...))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, posts, "Run's stop exported the batch")
	assert.Equal(t, "POST /v1/traces application/x-protobuf", posts[0])
}

func TestWithTracerProviderNil(t *testing.T) {
	err := Run(context.Background(), WithTracerProvider(nil), WithControllers(stubController{}))
	assert.ErrorContains(t, err, "tracer provider is nil")
}

// With --tracing-endpoint (or $OTEL_EXPORTER_OTLP_ENDPOINT) the flags trace
// every controller and every client request, and Run flushes the spans at
// its stop.
func ExampleFlags_TracerProvider() {
	flags := Flags{}
	fs := flag.NewFlagSet("foo-controller", flag.ContinueOnError)
	flags.Bind(fs)
	_ = fs.Parse([]string{"--tracing-endpoint=http://otel-collector:4318", "--tracing-sampling-ratio=0.1", "--kubeconfig=/nonexistent"})
	tp, err := flags.TracerProvider()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctrl, err := queue.New("foo", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), flags.ControllerOptions()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("tracing:", tp != nil, ctrl.Tracing())
	// Run(ctx, flags.Options(client)...) would shut it down; here:
	_ = flags.tracer.Shutdown(context.Background())
	// Output: tracing: true true
}
