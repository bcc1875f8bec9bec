package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/otlp"
)

// review: docs/tracing.md promises that the API server's spans of an
// operator's request are children of the request's client span ("Its
// create of the Deployment is a child span, and the API server's spans
// for that request are its children, as the request carried
// traceparent"; "its spans of the operator's requests join the
// operator's traces ... the API server's sampler follows a sampled
// parent"). An operator runs as a ServiceAccount, not as system:masters,
// and for such a user the API server ignores the header's parent: its
// span starts a trace of its own (linked), sampled at the API server's
// own rate. Here an operator's client (tracing.WrapConfig, as
// Flags.RESTConfig does) of a non-admin user makes a request within a
// sampled reconcile span, and the API server's span is not in that trace.
func TestReviewDocsAPIServerSpansJoinTheOperatorsTrace(t *testing.T) {
	receiver := otlp.StartT(t, otlp.Options{})
	cp := controlplane.StartT(t, controlplane.Options{
		Users:   []controlplane.User{{Name: "operator"}},
		Tracing: &controlplane.Tracing{Endpoint: receiver.GRPCAddr(), SamplingRatePerMillion: 1_000_000},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(receiver.HTTPTracesURL()))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "operator"))),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()

	cfg, err := cp.UserConfig("operator")
	require.NoError(t, err)
	tracing.WrapConfig(cfg, tp)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	rctx, span := tp.Tracer(tracing.ScopeName).Start(ctx, "Reconcile foo")
	err = client.Discovery().RESTClient().Get().AbsPath("/version").Do(rctx).Error()
	span.End()
	require.NoError(t, err)
	id := span.SpanContext().TraceID()

	// The API server did export its span of the request: one linked to
	// the operator's trace.
	_, err = receiver.WaitForSpan(ctx, otlp.Service("apiserver"), func(s otlp.Span) bool {
		for _, l := range s.Links {
			if l.TraceID == id {
				return true
			}
		}
		return false
	})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	_, err = receiver.WaitForSpan(wctx, otlp.Service("apiserver"), otlp.InTrace(id))
	require.NoError(t, err, "docs/tracing.md: the API server's spans of the operator's request are children of its client span, in the reconcile's trace")
}
