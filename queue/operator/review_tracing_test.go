package operator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes/fake"
)

// Review: OTEL_TRACES_SAMPLER names samplers the OpenTelemetry
// specification defines: always_off samples nothing, and traceidratio (no
// parentbased_ prefix) decides by the trace ID alone, whatever the parent
// says. The flags turn both into
// ParentBased(FollowLinks(TraceIDRatioBased(r))): an operator run with
// OTEL_TRACES_SAMPLER=always_off still samples and exports every reconcile
// set off by a sampled write (of another operator, say), and one run with
// traceidratio and a ratio of 0 samples every child of a sampled remote
// parent.
func TestReviewOTelSamplerNamesFollowTheSpec(t *testing.T) {
	sampled := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	tests := []struct {
		name string
		env  map[string]string
		opts func(ctx context.Context) (context.Context, []trace.SpanStartOption)
	}{{
		name: "always_off, a reconcile linked to a sampled write",
		env:  map[string]string{"OTEL_TRACES_SAMPLER": "always_off"},
		opts: func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
			return ctx, []trace.SpanStartOption{trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sampled})}
		},
	}, {
		name: "always_off, a child of a sampled parent",
		env:  map[string]string{"OTEL_TRACES_SAMPLER": "always_off"},
		opts: func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
			return trace.ContextWithRemoteSpanContext(ctx, sampled), nil
		},
	}, {
		name: "traceidratio 0, a child of a sampled parent",
		env:  map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
		opts: func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
			return trace.ContextWithRemoteSpanContext(ctx, sampled), nil
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := parse(t, Flags{})
			tp, err := f.TracerProvider()
			require.NoError(t, err)
			require.NotNil(t, tp)
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = f.tracer.Shutdown(ctx)
			}()
			ctx, opts := tt.opts(context.Background())
			_, span := tp.Tracer("test").Start(ctx, "Reconcile", opts...)
			span.End()
			assert.False(t, span.SpanContext().IsSampled(), "%s=%s sampled a span", "OTEL_TRACES_SAMPLER", tt.env["OTEL_TRACES_SAMPLER"])
		})
	}
}

// Review: WithTracerProvider (given by Flags.Options) makes Run shut the
// provider down, but only once Run got past its option checks: a Run that
// fails at once (here: no controller) returns with the provider's batch
// span processor still running, its buffered spans never exported. The
// caller of Flags.Options cannot tell that it has to shut it down itself.
func TestReviewRunThatFailsEarlyLeavesTheTracerProviderRunning(t *testing.T) {
	clearOTelEnv(t)
	ignore := goleak.IgnoreCurrent()
	f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
	tp, err := f.TracerProvider()
	require.NoError(t, err)
	require.NotNil(t, tp)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = f.tracer.Shutdown(ctx)
	})
	err = Run(context.Background(), f.Options(fake.NewClientset())...)
	require.ErrorContains(t, err, "no controller to run")
	assert.NoError(t, goleak.Find(ignore), "Run returned; the tracer provider given to it was not shut down")
}
