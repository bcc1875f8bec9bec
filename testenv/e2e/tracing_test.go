package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/foo"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/otlp"
)

// TestTracingFoo runs examples/foo with --tracing-endpoint and the API
// server with tracing, both exporting to an OTLP receiver of the test, and
// follows one trace through a real export: the test creates a Foo in a
// span of its own (the request carries traceparent, the Foo the
// tracing.k8s.io/traceparent annotation); the Foo's reconcile links to
// that span; its create of the Deployment is a client span below it; the
// API server's span of that request links to the client span (the
// controller is not a privileged user, so the API server starts a trace of
// its own); the Deployment's event sets off another reconcile of the Foo,
// which links to the reconcile that wrote the Deployment.
func TestTracingFoo(t *testing.T) {
	t.Parallel()
	receiver := otlp.StartT(t, otlp.Options{})
	r := newRelRig(t, controlplane.Options{
		Users:   []controlplane.User{{Name: "foo-tracing"}},
		Tracing: &controlplane.Tracing{Endpoint: receiver.GRPCAddr(), SamplingRatePerMillion: 1_000_000},
	})
	r.grantControllerRoles("foo-tracing")
	ns := r.createNamespace("traced")
	p := r.startFoo(t, "foo", r.userKubeconfig("foo-tracing"), "--tracing-endpoint="+receiver.HTTPEndpoint())
	relWaitReadyz(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// The test is a traced writer too, over OTLP/HTTP like the operator.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(receiver.HTTPTracesURL()))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "e2e-test"))),
	)
	defer func() { assert.NoError(t, tp.Shutdown(context.Background())) }()
	cfg := rest.CopyConfig(r.admin)
	tracing.WrapConfig(cfg, tp)
	foos, err := fooclientset.NewForConfig(cfg)
	require.NoError(t, err)

	// Foo created.
	sctx, createFoo := tp.Tracer("e2e").Start(ctx, "create Foo")
	f := relNewFoo("traced", "traced-web", 1)
	f.Namespace = ns
	require.True(t, tracing.SetAnnotation(sctx, f))
	_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Create(sctx, f, metav1.CreateOptions{})
	createFoo.End()
	require.NoError(t, err)
	fooSpan := createFoo.SpanContext()
	key := ns + "/" + f.Name
	reconcile := otlp.Name("Reconcile " + foo.ControllerName)
	// waitSpan waits for a step's span; a failure shows the trace so far
	// and every reconcile of the Foo.
	waitSpan := func(step string, matches ...otlp.Match) otlp.Span {
		t.Helper()
		s, err := receiver.WaitForSpan(ctx, matches...)
		if err != nil {
			var b strings.Builder
			for _, rs := range receiver.Spans(reconcile, otlp.Attr("ctrlkit.key", key)) {
				b.WriteString("\n  " + rs.String() + " " + fmt.Sprint(rs.Attributes))
			}
			require.NoError(t, err, "%s; the trace so far:\n%s\nreconciles of the Foo:%s", step, receiver.LinkedTrace(fooSpan.TraceID()), b.String())
		}
		t.Logf("%s: %s", step, s)
		return s
	}

	// -> Foo reconcile, linked to the create.
	first := waitSpan("the Foo's reconcile", reconcile, otlp.Attr("ctrlkit.key", key), otlp.LinksTo(fooSpan.TraceID(), fooSpan.SpanID()))
	assert.Equal(t, "add", first.Attributes["ctrlkit.trigger.event"], "attributes: %v", first.Attributes)
	assert.Equal(t, "object", first.Attributes["ctrlkit.trigger.source"])
	assert.Equal(t, otlp.HTTP, first.Protocol)

	// -> Deployment create, a client span of the reconcile.
	isDeploymentCreate := otlp.Any(
		otlp.AttrFunc("url.full", func(v any) bool {
			s, _ := v.(string)
			return strings.Contains(s, "/apis/apps/v1/namespaces/"+ns+"/deployments")
		}),
		otlp.AttrFunc("http.url", func(v any) bool {
			s, _ := v.(string)
			return strings.Contains(s, "/apis/apps/v1/namespaces/"+ns+"/deployments")
		}),
	)
	isPost := otlp.Any(otlp.Attr("http.request.method", "POST"), otlp.Attr("http.method", "POST"))
	create := waitSpan("the Deployment's create", otlp.ChildOf(first.TraceID, first.SpanID), otlp.Kind(trace.SpanKindClient), isPost, isDeploymentCreate)

	// -> the API server's spans of that request.
	server := waitSpan("the API server's span", otlp.Service("apiserver"), otlp.LinksTo(create.TraceID, create.SpanID))
	assert.Equal(t, "POST /apis/apps/v1/namespaces/{:namespace}/deployments", server.Name)

	// -> the Deployment carries the reconcile's trace context ...
	d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "traced-web", metav1.GetOptions{})
	require.NoError(t, err)
	written := tracing.SpanContextOf(d)
	assert.Equal(t, first.TraceID, written.TraceID(), "annotation %q", d.Annotations[tracing.Annotation])
	assert.Equal(t, first.SpanID, written.SpanID())

	// -> and its event sets off a reconcile of the Foo linked to the write.
	second := waitSpan("the reconcile the Deployment's event set off", reconcile, otlp.Attr("ctrlkit.key", key), otlp.LinksTo(first.TraceID, first.SpanID))
	assert.NotEqual(t, first.SpanID, second.SpanID)

	// One trace, put together by parents and links.
	tr, err := receiver.WaitForTrace(ctx, fooSpan.TraceID(), true, func(tr otlp.Trace) bool {
		_, ok := tr.Span(second.TraceID, second.SpanID)
		return ok && len(tr.Find(otlp.Name("create Foo"))) == 1
	})
	require.NoError(t, err)
	t.Logf("the trace of the Foo:\n%s", tr)
	for _, s := range []otlp.Span{first, create, server, second} {
		_, ok := tr.Span(s.TraceID, s.SpanID)
		assert.True(t, ok, "in the trace: %s", s)
	}
	assert.True(t, tr.IsDescendant(create, first))
	assert.NotEmpty(t, tr.Find(otlp.Service("apiserver"), otlp.NamePrefix("POST /apis/samplecontroller.k8s.io/")), "the API server's span of the Foo's create")
	assert.Zero(t, receiver.Dropped())

	relTerminate(t, p, shutdownTimeout+30*time.Second)
	relAssertNoDataRace(t, p)
}
