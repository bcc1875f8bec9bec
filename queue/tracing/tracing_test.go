package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newProvider(t *testing.T, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// The annotation a write sets carries the span context of the write's
// span, and reading it back gives that span context.
func TestAnnotationRoundTrip(t *testing.T) {
	tp, _ := newProvider(t)
	ctx, span := tp.Tracer("test").Start(context.Background(), "write")
	defer span.End()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"keep": "me"}}}
	require.True(t, tracing.SetAnnotation(ctx, cm))
	assert.Equal(t, "me", cm.Annotations["keep"], "other annotations stay")
	assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, cm.Annotations[tracing.Annotation])
	got := tracing.SpanContextOf(cm)
	assert.Equal(t, span.SpanContext().TraceID(), got.TraceID())
	assert.Equal(t, span.SpanContext().SpanID(), got.SpanID())
	assert.True(t, got.IsSampled())
	assert.True(t, got.IsRemote())
}

func TestAnnotationWithoutSpan(t *testing.T) {
	cm := &corev1.ConfigMap{}
	assert.False(t, tracing.SetAnnotation(context.Background(), cm), "no span, no annotation")
	assert.Empty(t, cm.Annotations)
	assert.Empty(t, tracing.Traceparent(context.Background()))
	for _, v := range []string{"", "garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		cm.Annotations = map[string]string{tracing.Annotation: v}
		assert.False(t, tracing.SpanContextOf(cm).IsValid(), "%q", v)
	}
}

func TestObjectTrigger(t *testing.T) {
	tp, _ := newProvider(t)
	ctx, span := tp.Tracer("test").Start(context.Background(), "write")
	defer span.End()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}}
	tracing.SetAnnotation(ctx, cm)
	tr := tracing.ObjectTrigger(tracing.EventUpdate, tracing.SourceOwner, cm, true)
	assert.Equal(t, tracing.Trigger{Event: tracing.EventUpdate, Source: tracing.SourceOwner, Object: "ns/a", ResourceVersion: "7", Link: tracing.SpanContextOf(cm)}, tr)
	assert.True(t, tr.Link.IsValid())
	assert.False(t, tracing.ObjectTrigger(tracing.EventUpdate, tracing.SourceOwner, cm, false).Link.IsValid(), "no link unless asked")
	cluster := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	assert.Equal(t, "ns", tracing.ObjectTrigger(tracing.EventAdd, tracing.SourceObject, cluster, true).Object)
	assert.ElementsMatch(t, []attribute.KeyValue{
		tracing.AttrTriggerEvent.String("update"), tracing.AttrTriggerSource.String("owner"),
		tracing.AttrTriggerObject.String("ns/a"), tracing.AttrTriggerResourceVersion.String("7"),
	}, tr.Attributes())
	assert.Empty(t, tracing.Trigger{}.Attributes())
}

// A span with a link follows the sampling decision of the linked span;
// without one, the root sampler decides.
func TestFollowLinks(t *testing.T) {
	sc := func(sampled bool) trace.SpanContext {
		cfg := trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true}
		if sampled {
			cfg.TraceFlags = trace.FlagsSampled
		}
		return trace.NewSpanContext(cfg)
	}
	tests := []struct {
		name  string
		root  sdktrace.Sampler
		links []trace.Link
		want  bool
	}{
		{name: "no links: root samples", root: sdktrace.AlwaysSample(), want: true},
		{name: "no links: root drops", root: sdktrace.NeverSample(), want: false},
		{name: "a sampled link wins over the root", root: sdktrace.NeverSample(), links: []trace.Link{{SpanContext: sc(false)}, {SpanContext: sc(true)}}, want: true},
		{name: "only unsampled links: dropped whatever the root", root: sdktrace.AlwaysSample(), links: []trace.Link{{SpanContext: sc(false)}}, want: false},
		{name: "links without a span context leave it to the root", root: sdktrace.AlwaysSample(),
			links: []trace.Link{{Attributes: []attribute.KeyValue{tracing.AttrTriggerSource.String("periodic")}}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rec := newProvider(t, sdktrace.WithSampler(sdktrace.ParentBased(tracing.FollowLinks(tt.root))))
			_, span := tp.Tracer("test").Start(context.Background(), "reconcile", trace.WithNewRoot(), trace.WithLinks(tt.links...))
			span.End()
			assert.Equal(t, tt.want, span.SpanContext().IsSampled())
			assert.Equal(t, tt.want, len(rec.Ended()) == 1)
		})
	}
	t.Run("a child follows its parent", func(t *testing.T) {
		tp, _ := newProvider(t, sdktrace.WithSampler(sdktrace.ParentBased(tracing.FollowLinks(sdktrace.NeverSample()))))
		parent := trace.ContextWithRemoteSpanContext(context.Background(), sc(true))
		_, span := tp.Tracer("test").Start(parent, "child")
		span.End()
		assert.True(t, span.SpanContext().IsSampled())
	})
	assert.Equal(t, "FollowLinks{AlwaysOnSampler}", tracing.FollowLinks(sdktrace.AlwaysSample()).Description())
}

// DropEmpty drops the reconcile spans that wrote nothing and did not fail,
// and nothing else.
func TestDropEmpty(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracing.DropEmpty(rec)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconciles := tp.Tracer(tracing.ScopeName)
	start := func(name string, wrote bool, failed bool) {
		_, s := reconciles.Start(context.Background(), name)
		s.SetAttributes(tracing.AttrWrote.Bool(wrote))
		if failed {
			s.SetStatus(codes.Error, "boom")
		}
		s.End()
	}
	start("idle", false, false)
	start("wrote", true, false)
	start("failed", false, true)
	_, other := tp.Tracer("someone-else").Start(context.Background(), "other")
	other.SetAttributes(tracing.AttrWrote.Bool(false))
	other.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	assert.Equal(t, []string{"wrote", "failed", "other"}, names)
}

// The transport makes each request a child span of the span in its
// context, sends the traceparent header of that child, and marks the
// reconcile of a write.
func TestTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	tp, rec := newProvider(t)
	cfg := &rest.Config{Host: srv.URL}
	tracing.WrapConfig(cfg, tp)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	for _, tt := range []struct {
		method string
		wrote  bool
	}{{http.MethodGet, false}, {http.MethodPost, true}, {http.MethodPut, true}, {http.MethodPatch, true}, {http.MethodDelete, true}} {
		got = nil
		ctx, wrote := tracing.WithWriteMark(context.Background())
		ctx, parent := tp.Tracer("test").Start(ctx, "reconcile")
		req, err := http.NewRequestWithContext(ctx, tt.method, srv.URL+"/api/v1/namespaces/ns/configmaps", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		parent.End()
		assert.Equal(t, tt.wrote, wrote(), tt.method)
		spans := rec.Ended()
		child := spans[len(spans)-2]
		assert.Equal(t, trace.SpanKindClient, child.SpanKind(), tt.method)
		assert.Equal(t, parent.SpanContext().SpanID(), child.Parent().SpanID(), "%s: a child of the reconcile", tt.method)
		require.Len(t, got, 1)
		assert.Contains(t, got[0], child.SpanContext().SpanID().String(), "%s: the header names the client span", tt.method)
	}
	assert.Same(t, http.DefaultTransport, tracing.Transport(nil)(http.DefaultTransport), "tracing off: the transport unchanged")
	plain := &rest.Config{}
	tracing.WrapConfig(plain, nil)
	assert.Nil(t, plain.WrapTransport)
	tracing.MarkWrite(context.Background()) // without a mark: nothing to do, no panic
}
