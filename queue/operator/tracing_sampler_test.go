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

// OTEL_TRACES_SAMPLER names samplers the OpenTelemetry specification
// defines: always_off samples nothing, and traceidratio (no parentbased_
// prefix) decides by the trace ID alone, whatever the parent says. Were
// both made ParentBased(FollowLinks(TraceIDRatioBased(r))), like the
// flags' own sampling, an operator run with OTEL_TRACES_SAMPLER=always_off
// would still sample and export every reconcile set off by a sampled write
// (of another operator, say), and one run with traceidratio and a ratio of
// 0 every child of a sampled remote parent.
func TestOTelSamplerNamesFollowTheSpec(t *testing.T) {
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

// WithTracerProvider (given by Flags.Options) makes Run shut the provider
// down on every return path, also when Run fails at once (here: no
// controller): otherwise its batch span processor would keep running and
// its buffered spans never be exported, and the caller of Flags.Options
// cannot tell that it has to shut it down itself.
func TestRunThatFailsEarlyShutsTheTracerProviderDown(t *testing.T) {
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

// The parentbased_ samplers of OTEL_TRACES_SAMPLER follow a parent and, as
// documented, links; always_on samples whatever the parent says; and
// --tracing-sampling-ratio keeps the flags' own sampling,
// ParentBased(FollowLinks(ratio)), whatever the environment names.
func TestOTelSamplerFollowsParentsAndLinks(t *testing.T) {
	sampled := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	notSampled := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{3}, SpanID: trace.SpanID{4}, Remote: true,
	})
	link := func(sc trace.SpanContext) func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
		return func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
			return ctx, []trace.SpanStartOption{trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc})}
		}
	}
	parent := func(sc trace.SpanContext) func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
		return func(ctx context.Context) (context.Context, []trace.SpanStartOption) {
			return trace.ContextWithRemoteSpanContext(ctx, sc), nil
		}
	}
	root := func(ctx context.Context) (context.Context, []trace.SpanStartOption) { return ctx, nil }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		opts    func(ctx context.Context) (context.Context, []trace.SpanStartOption)
		sampled bool
	}{
		{name: "default, a root", opts: root, sampled: true},
		{name: "default, linked to a write not sampled", opts: link(notSampled), sampled: false},
		{name: "parentbased_always_off, linked to a sampled write", env: map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, opts: link(sampled), sampled: true},
		{name: "parentbased_always_off, a root", env: map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, opts: root, sampled: false},
		{name: "parentbased_traceidratio 0, a child of a sampled parent", env: map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, opts: parent(sampled), sampled: true},
		{name: "always_on, a child of a parent not sampled", env: map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, opts: parent(notSampled), sampled: true},
		{name: "ALWAYS_OFF, a root", env: map[string]string{"OTEL_TRACES_SAMPLER": "ALWAYS_OFF"}, opts: root, sampled: false},
		{name: "the flag over always_off, linked to a sampled write", args: []string{"--tracing-sampling-ratio=0"}, env: map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, opts: link(sampled), sampled: true},
		{name: "the flag over always_on, a root", args: []string{"--tracing-sampling-ratio=0"}, env: map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, opts: root, sampled: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := parse(t, Flags{}, tt.args...)
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
			assert.Equal(t, tt.sampled, span.SpanContext().IsSampled())
		})
	}
}
