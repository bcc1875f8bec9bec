package tracing_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A client of a wrapped config: its request, made in a reconcile's
// context, is a client span, a child of the reconcile's span, and carries
// the traceparent header to the API server (here a stand-in that answers
// one ConfigMap).
func ExampleWrapConfig() {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("traceparent sent:", r.Header.Get("traceparent") != "")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"default","name":"settings"}}`))
	}))
	defer apiServer.Close()

	cfg := &rest.Config{Host: apiServer.URL}
	tracing.WrapConfig(cfg, tp) // what operator.Flags.RESTConfig does with tracing on
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A reconcile's span, as queue.WithTracing starts it.
	ctx, reconcileSpan := tp.Tracer("example").Start(context.Background(), "Reconcile configmaps")
	if _, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		fmt.Println(err)
	}
	reconcileSpan.End()
	for _, s := range exporter.GetSpans() {
		fmt.Printf("%s, child of the reconcile: %v\n", s.Name, s.Parent.SpanID() == reconcileSpan.SpanContext().SpanID())
	}
	// Output:
	// traceparent sent: true
	// HTTP GET, child of the reconcile: true
	// Reconcile configmaps, child of the reconcile: false
}

// Transport wraps any http.RoundTripper: a write through it marks the
// reconcile of its context as one that wrote (what DropEmpty and the span's
// ctrlkit.wrote read); a read does not.
func ExampleTransport() {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer server.Close()
	client := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}

	for _, method := range []string{http.MethodGet, http.MethodPut} {
		// queue.WithTracing gives every reconcile's context such a mark.
		ctx, wrote := tracing.WithWriteMark(context.Background())
		req, err := http.NewRequestWithContext(ctx, method, server.URL, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = resp.Body.Close()
		fmt.Println(method, "wrote:", wrote())
	}
	// Output:
	// GET wrote: false
	// PUT wrote: true
}

// A traced controller whose provider drops the spans of reconciles that
// wrote nothing: of its two reconciles, only the one that wrote is
// exported. (A reconcile writes through reconcile/write or a client of a
// config given to WrapConfig; here it marks the write itself.)
func ExampleDropEmpty() {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracing.DropEmpty(sdktrace.NewSimpleSpanProcessor(exporter))))
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int32
	ctrl, err := queue.New("configmaps", reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		if key == "default/changed" {
			tracing.MarkWrite(ctx)
		}
		if done.Add(1) == 2 {
			cancel()
		}
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctrl.Add("default/changed")
	ctrl.Add("default/unchanged")
	if err := ctrl.Run(ctx); err != nil {
		fmt.Println(err)
	}
	for _, s := range exporter.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == tracing.AttrKey {
				fmt.Println(s.Name, a.Value.AsString())
			}
		}
	}
	_ = tp.Shutdown(context.Background())
	// Output: Reconcile configmaps default/changed
}
