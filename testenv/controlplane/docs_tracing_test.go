package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// docs/tracing.md: the API server's span of an operator's request joins
// the reconcile's trace, as a child of the request's client span, only
// for a privileged user (system:masters, system:monitoring). For any
// other user, such as an operator's ServiceAccount (the e2e test's user
// is one of these), the span starts a trace of its own, linked to the
// client span, sampled at the API server's samplingRatePerMillion. Here
// an operator's client (tracing.WrapConfig, as Flags.RESTConfig does)
// makes a request within a sampled reconcile span, as each kind of user.
func TestDocsAPIServerSpansOfAnOperatorsRequest(t *testing.T) {
	receiver := otlp.StartT(t, otlp.Options{})
	cp := controlplane.StartT(t, controlplane.Options{
		Users: []controlplane.User{
			{Name: "operator"},
			{Name: "monitoring", Groups: []string{"system:monitoring"}},
		},
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

	for _, tc := range []struct {
		user string
		// joins: the API server's span is the child of the client span,
		// in the reconcile's trace; otherwise it is a root linked to it.
		joins bool
	}{
		{user: "operator", joins: false},
		{user: "monitoring", joins: true},
	} {
		t.Run(tc.user, func(t *testing.T) {
			cfg, err := cp.UserConfig(tc.user)
			require.NoError(t, err)
			tracing.WrapConfig(cfg, tp)
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			rctx, span := tp.Tracer(tracing.ScopeName).Start(ctx, "Reconcile foo")
			err = client.Discovery().RESTClient().Get().AbsPath("/version").Do(rctx).Error()
			span.End()
			require.NoError(t, err)
			id := span.SpanContext().TraceID()

			// The API server's span of the request names the client span:
			// as its parent or as a link.
			server, err := receiver.WaitForSpan(ctx, otlp.Service("apiserver"), func(s otlp.Span) bool {
				if s.TraceID == id {
					return true
				}
				for _, l := range s.Links {
					if l.TraceID == id {
						return true
					}
				}
				return false
			})
			require.NoError(t, err)
			if tc.joins {
				assert.Equal(t, id, server.TraceID, "a privileged user's request: the API server's span is in the reconcile's trace")
				assert.False(t, server.IsRoot(), "and the child of the client span")
				return
			}
			assert.NotEqual(t, id, server.TraceID, "a ServiceAccount's request: the API server's span starts a trace of its own")
			assert.True(t, server.IsRoot(), "a root, linked to the client span")
			assert.Empty(t, receiver.Spans(otlp.Service("apiserver"), otlp.InTrace(id)), "no API server span in the reconcile's trace")
		})
	}
}
