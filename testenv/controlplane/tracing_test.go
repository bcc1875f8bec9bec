package controlplane_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/otlp"
)

// TestAPIServerTracing runs the API server with tracing to an OTLP
// receiver of the test, makes requests with a traceparent header, and
// finds the API server's spans where its documentation says: the child of
// the header's span for the admin (system:masters), a new trace linked to
// it for any other user.
func TestAPIServerTracing(t *testing.T) {
	receiver := otlp.StartT(t, otlp.Options{})
	cp := controlplane.StartT(t, controlplane.Options{
		Users:   []controlplane.User{{Name: "alice"}},
		Tracing: &controlplane.Tracing{Endpoint: receiver.GRPCAddr(), SamplingRatePerMillion: 1_000_000},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// The test's own spans go to the same receiver over OTLP/HTTP, as an
	// operator's would.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(receiver.HTTPTracesURL()))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "tracing-test"))),
	)
	defer func() { assert.NoError(t, tp.Shutdown(context.Background())) }()
	tracer := tp.Tracer("controlplane_test")
	traceparent := func(ctx context.Context) string {
		h := http.Header{}
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
		return h.Get("traceparent")
	}

	t.Run("an admin's request is the child of its traceparent", func(t *testing.T) {
		admin, err := kubernetes.NewForConfig(cp.Config())
		require.NoError(t, err)
		sctx, span := tracer.Start(ctx, "create settings", trace.WithSpanKind(trace.SpanKindClient))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"k": "v"}}
		err = admin.CoreV1().RESTClient().Post().Namespace(metav1.NamespaceDefault).Resource("configmaps").
			SetHeader("traceparent", traceparent(sctx)).
			Body(cm).Do(sctx).Error()
		span.End()
		require.NoError(t, err)
		sc := span.SpanContext()

		server, err := receiver.WaitForSpan(ctx, otlp.Service("apiserver"), otlp.ChildOf(sc.TraceID(), sc.SpanID()))
		require.NoError(t, err)
		assert.Equal(t, "POST /api/v1/namespaces/{:namespace}/configmaps", server.Name)
		assert.Equal(t, trace.SpanKindServer, server.Kind)
		assert.Equal(t, otlp.GRPC, server.Protocol)

		// The span names the request's audit ID: the audit log's event of
		// the same request starts with it.
		auditID, _ := server.Attributes["audit-id"].(string)
		require.NotEmpty(t, auditID, "attributes: %v", server.Attributes)
		events, err := cp.AuditEvents()
		require.NoError(t, err)
		creates := audit.Select(events, audit.ByVerb("create"), audit.ByResource("", "configmaps"), audit.ByObject(metav1.NamespaceDefault, "settings"))
		require.Len(t, creates, 1)
		assert.Contains(t, creates[0].AuditID, auditID)

		tr, err := receiver.WaitForTrace(ctx, sc.TraceID(), false, func(tr otlp.Trace) bool {
			return len(tr.Find(otlp.Service("tracing-test"))) == 1
		})
		require.NoError(t, err)
		t.Logf("the trace:\n%s", tr)
		roots := tr.Roots()
		require.Len(t, roots, 1, "one tree:\n%s", tr)
		assert.Equal(t, "create settings", roots[0].Name)
		assert.Equal(t, otlp.HTTP, roots[0].Protocol)
		for _, s := range tr.Find(otlp.Service("apiserver")) {
			assert.True(t, tr.IsDescendant(s, roots[0]), "every API server span is below the client's: %s", s)
		}
	})

	t.Run("another user's request starts a trace linked to its traceparent", func(t *testing.T) {
		cfg, err := cp.UserConfig("alice")
		require.NoError(t, err)
		alice, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		sctx, span := tracer.Start(ctx, "get version", trace.WithSpanKind(trace.SpanKindClient))
		err = alice.Discovery().RESTClient().Get().AbsPath("/version").
			SetHeader("traceparent", traceparent(sctx)).
			Do(sctx).Error()
		span.End()
		require.NoError(t, err)
		sc := span.SpanContext()

		server, err := receiver.WaitForSpan(ctx, otlp.Service("apiserver"), otlp.LinksTo(sc.TraceID(), sc.SpanID()))
		require.NoError(t, err)
		assert.Equal(t, "GET", server.Name, "a request that is not for a resource is named by its method")
		assert.True(t, server.IsRoot())
		assert.NotEqual(t, sc.TraceID(), server.TraceID)
		assert.Empty(t, receiver.Spans(otlp.Service("apiserver"), otlp.InTrace(sc.TraceID())), "nothing of the API server in the client's trace")

		tr, err := receiver.WaitForTrace(ctx, sc.TraceID(), true, func(tr otlp.Trace) bool {
			return len(tr.Find(otlp.Name("get version"))) == 1
		})
		require.NoError(t, err)
		t.Logf("the client's trace with the trace linked to it:\n%s", tr)
		client := tr.Find(otlp.Name("get version"))[0]
		assert.Equal(t, []string{server.Name}, spanNames(tr.LinkedFrom(client)))
	})

	assert.Zero(t, receiver.Dropped())
}

func spanNames(spans []otlp.Span) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestTracingOptionsRefused: what the API server would refuse is refused
// before anything starts.
func TestTracingOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tracing controlplane.Tracing
		want    string
	}{
		{"no endpoint", controlplane.Tracing{}, "Endpoint is required"},
		{"negative rate", controlplane.Tracing{Endpoint: "127.0.0.1:4317", SamplingRatePerMillion: -1}, "not within 0 and 1000000"},
		{"rate above a million", controlplane.Tracing{Endpoint: "127.0.0.1:4317", SamplingRatePerMillion: 1_000_001}, "not within 0 and 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controlplane.Start(t.Context(), controlplane.Options{Tracing: &tc.tracing})
			require.ErrorContains(t, err, tc.want)
		})
	}
}
