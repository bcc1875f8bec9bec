package otlp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/otlp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the HTTP exporter's and the tests'
		// clients.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

// waitTimeout bounds each wait: far more than an export on loopback takes,
// even on a loaded machine.
const waitTimeout = time.Minute

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// exporter is one way the SDK sends to the receiver.
type exporter struct {
	name     string
	protocol otlp.Protocol
	new      func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error)
}

var exporters = []exporter{
	{"gRPC", otlp.GRPC, func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error) {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(r.GRPCAddr()), otlptracegrpc.WithInsecure())
	}},
	{"gRPC with gzip", otlp.GRPC, func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error) {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(r.GRPCAddr()), otlptracegrpc.WithInsecure(), otlptracegrpc.WithCompressor("gzip"))
	}},
	{"HTTP", otlp.HTTP, func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error) {
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(r.HTTPAddr()), otlptracehttp.WithInsecure())
	}},
	{"HTTP with gzip", otlp.HTTP, func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error) {
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(r.HTTPAddr()), otlptracehttp.WithInsecure(), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	}},
	{"HTTP by URL", otlp.HTTP, func(ctx context.Context, r *otlp.Receiver) (sdktrace.SpanExporter, error) {
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(r.HTTPTracesURL()))
	}},
}

// newProvider returns a TracerProvider of the service that exports through
// exp in batches; it is shut down (flushed) when the test ends.
func newProvider(t *testing.T, service string, exp sdktrace.SpanExporter) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(50*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service), attribute.String("host.name", "unit"))),
	)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		assert.NoError(t, tp.Shutdown(ctx))
	})
	return tp
}

// TestExportersDeliver sends a small trace with every field the receiver
// keeps through each of the SDK's OTLP exporters and checks what arrived.
func TestExportersDeliver(t *testing.T) {
	for _, e := range exporters {
		t.Run(e.name, func(t *testing.T) {
			r := otlp.StartT(t, otlp.Options{})
			ctx := waitCtx(t)
			exp, err := e.new(ctx, r)
			require.NoError(t, err)
			tp := newProvider(t, "unit-"+e.name, exp)
			tracer := tp.Tracer("ctrlkit.test/otlp", trace.WithInstrumentationVersion("v1.2.3"))

			// A span of another trace for the link.
			_, other := tracer.Start(context.Background(), "other")
			other.End()

			start := time.Now().Round(time.Microsecond)
			pctx, parent := tracer.Start(context.Background(), "reconcile", trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(start),
				trace.WithLinks(trace.Link{SpanContext: other.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("why", "trigger")}}),
				trace.WithAttributes(
					attribute.String("key", "ns/foo"),
					attribute.Int("attempt", 3),
					attribute.Bool("requeue", true),
					attribute.Float64("ratio", 0.5),
					attribute.StringSlice("triggers", []string{"add", "update"}),
				))
			_, child := tracer.Start(pctx, "POST", trace.WithSpanKind(trace.SpanKindClient))
			child.AddEvent("sent", trace.WithAttributes(attribute.Int64("bytes", 42)))
			child.SetStatus(codes.Error, "conflict")
			child.End()
			parent.End(trace.WithTimestamp(start.Add(time.Second)))

			spans, err := r.WaitForSpans(ctx, 3, otlp.Service("unit-"+e.name))
			require.NoError(t, err)
			require.Len(t, spans, 3)
			assert.Positive(t, r.Exports(e.protocol))
			assert.Zero(t, r.Dropped())

			got, err := r.WaitForSpan(ctx, otlp.Name("reconcile"))
			require.NoError(t, err)
			psc := parent.SpanContext()
			assert.Equal(t, psc.TraceID(), got.TraceID)
			assert.Equal(t, psc.SpanID(), got.SpanID)
			assert.True(t, got.IsRoot())
			assert.Equal(t, trace.SpanKindInternal, got.Kind)
			assert.True(t, got.Start.Equal(start), "start %s, want %s", got.Start, start)
			assert.Equal(t, time.Second, got.End.Sub(got.Start))
			assert.Equal(t, map[string]any{
				"key":      "ns/foo",
				"attempt":  int64(3),
				"requeue":  true,
				"ratio":    0.5,
				"triggers": []any{"add", "update"},
			}, got.Attributes)
			assert.Equal(t, "unit-"+e.name, got.Service)
			assert.Equal(t, "unit", got.Resource["host.name"])
			assert.Equal(t, "ctrlkit.test/otlp", got.Scope)
			assert.Equal(t, "v1.2.3", got.ScopeVersion)
			assert.Equal(t, e.protocol, got.Protocol)
			require.Len(t, got.Links, 1)
			assert.Equal(t, other.SpanContext().TraceID(), got.Links[0].TraceID)
			assert.Equal(t, other.SpanContext().SpanID(), got.Links[0].SpanID)
			assert.Equal(t, map[string]any{"why": "trigger"}, got.Links[0].Attributes)
			assert.True(t, got.LinksTo(other.SpanContext().TraceID(), other.SpanContext().SpanID()))

			for _, m := range []otlp.Match{
				otlp.Attr("attempt", 3), otlp.Attr("attempt", int32(3)), otlp.Attr("ratio", float32(0.5)),
				otlp.Attr("triggers", []string{"add", "update"}), otlp.HasAttr("requeue"), otlp.NamePrefix("rec"),
				otlp.AttrFunc("key", func(v any) bool { return v == "ns/foo" }), otlp.Kind(trace.SpanKindInternal),
				otlp.LinksTo(other.SpanContext().TraceID(), other.SpanContext().SpanID()), otlp.Any(otlp.Name("x"), otlp.Name("reconcile")),
			} {
				assert.True(t, m(got))
			}
			for _, m := range []otlp.Match{
				otlp.Attr("attempt", 4), otlp.Attr("attempt", "3"), otlp.HasAttr("nope"), otlp.Not(otlp.Name("reconcile")), otlp.Kind(trace.SpanKindClient),
			} {
				assert.False(t, m(got))
			}

			c, err := r.WaitForSpan(ctx, otlp.ChildOf(psc.TraceID(), psc.SpanID()))
			require.NoError(t, err)
			assert.Equal(t, "POST", c.Name)
			assert.Equal(t, trace.SpanKindClient, c.Kind)
			assert.Equal(t, otlp.Status{Code: codes.Error, Message: "conflict"}, c.Status)
			require.Len(t, c.Events, 1)
			assert.Equal(t, "sent", c.Events[0].Name)
			assert.Equal(t, map[string]any{"bytes": int64(42)}, c.Events[0].Attributes)
			assert.False(t, c.Events[0].Time.IsZero())

			tr := r.Trace(psc.TraceID())
			require.Len(t, tr.Spans, 2)
			assert.Equal(t, []otlp.Span{got}, tr.Roots())
			assert.Equal(t, []otlp.Span{c}, tr.Children(got))
			assert.True(t, tr.IsDescendant(c, got))
			assert.False(t, tr.IsDescendant(got, c))
			p, ok := tr.Parent(c)
			require.True(t, ok)
			assert.Equal(t, got.SpanID, p.SpanID)
			assert.Len(t, r.LinkedTrace(psc.TraceID()).Spans, 3, "the linked span's trace joins")
		})
	}
}

// TestPackageDoc runs the package documentation's example: the API server
// traces its own requests (the renewal of its identity Lease, every ten
// seconds, at the latest).
func TestPackageDoc(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	cp := controlplane.StartT(t, controlplane.Options{
		Tracing: &controlplane.Tracing{Endpoint: r.GRPCAddr(), SamplingRatePerMillion: 1_000_000},
	})
	// make requests to cp, run an operator that exports to r.HTTPEndpoint(), then:
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	span, err := r.WaitForSpan(ctx, otlp.Service("apiserver"), otlp.Kind(trace.SpanKindServer))
	require.NoError(t, err)
	t.Logf("its trace, with the traces linked to it:\n%s", r.LinkedTrace(span.TraceID))

	assert.Equal(t, otlp.GRPC, span.Protocol)
	assert.NotNil(t, cp.Config())
}

// TestWaitEndsWithContext: a wait for what never comes fails when its
// context ends, naming what did come.
func TestWaitEndsWithContext(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	exportProto(t, r, protoSpan(1, 1, 0, "seen"))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := r.WaitForSpan(ctx, otlp.Name("never"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "0 matched")
	assert.ErrorContains(t, err, `"seen"`)

	_, err = r.WaitForTrace(ctx, traceIDOf(1), false, func(tr otlp.Trace) bool { return len(tr.Spans) > 1 })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, `"seen"`)
}

// TestWaitWakesOnArrival: a wait that started before the spans came ends
// when they do.
func TestWaitWakesOnArrival(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	ctx := waitCtx(t)
	type result struct {
		tr  otlp.Trace
		err error
	}
	done := make(chan result, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		tr, err := r.WaitForTrace(ctx, traceIDOf(7), false, func(tr otlp.Trace) bool { return len(tr.Spans) == 2 })
		done <- result{tr, err}
	}()
	<-waiting
	exportProto(t, r, protoSpan(7, 1, 0, "root"))
	exportProto(t, r, protoSpan(7, 2, 1, "child"))
	res := <-done
	require.NoError(t, res.err)
	assert.Len(t, res.tr.Spans, 2)
}

// TestLinkedTrace: traces connected by links in either direction, also
// through a third trace, are put together; others are not.
func TestLinkedTrace(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	write := protoSpan(1, 11, 10, "create deployment")
	root := protoSpan(1, 10, 0, "reconcile foo")
	server := protoSpan(2, 20, 0, "POST deployments")
	server.Links = []*tracepb.Span_Link{{TraceId: traceBytes(1), SpanId: spanBytes(11)}}
	event := protoSpan(3, 30, 0, "reconcile foo again")
	event.Links = []*tracepb.Span_Link{{TraceId: traceBytes(2), SpanId: spanBytes(20)}, {TraceId: traceBytes(9), SpanId: spanBytes(99)}}
	unrelated := protoSpan(4, 40, 0, "unrelated")
	// The same span twice, as a retried export would send it.
	exportProto(t, r, root, write, server, event, unrelated, protoSpan(1, 11, 10, "create deployment"))

	tr := r.Trace(traceIDOf(1))
	assert.Len(t, tr.Spans, 2, "a repeated span is kept once")
	assert.Equal(t, []otlp.TraceID{traceIDOf(1)}, tr.TraceIDs())

	lt := r.LinkedTrace(traceIDOf(1))
	assert.Equal(t, []otlp.TraceID{traceIDOf(1), traceIDOf(2), traceIDOf(3)}, lt.TraceIDs())
	assert.Equal(t, lt.TraceIDs(), r.LinkedTrace(traceIDOf(3)).TraceIDs(), "the same from the other end")
	assert.Len(t, r.LinkedTrace(traceIDOf(4)).Spans, 1)

	w, ok := lt.Span(traceIDOf(1), spanIDOf(11))
	require.True(t, ok)
	s, ok := lt.Span(traceIDOf(2), spanIDOf(20))
	require.True(t, ok)
	assert.Equal(t, []string{"POST deployments"}, names(lt.LinkedFrom(w)))
	assert.Equal(t, []string{"reconcile foo again"}, names(lt.LinkedFrom(s)))
	e, _ := lt.Span(traceIDOf(3), spanIDOf(30))
	assert.Equal(t, []string{"POST deployments"}, names(lt.Linked(e)), "a link to a span not received is left out")
	assert.Equal(t, []string{"reconcile foo", "POST deployments", "reconcile foo again"}, names(lt.Roots()))
	rs, _ := lt.Span(traceIDOf(1), spanIDOf(10))
	assert.Equal(t, []string{"create deployment"}, names(lt.Descendants(rs)))

	out := lt.String()
	assert.Contains(t, out, "~> test \"POST deployments\"")
	assert.Contains(t, out, "~> (not received)")
	assert.Contains(t, out, "  - test \"create deployment\"", "the child is indented below its parent")
	assert.Equal(t, "(no spans)\n", r.Trace(traceIDOf(5)).String())
}

// TestParentCycle: parent IDs that form a cycle neither hang the walk
// nor the drawing.
func TestParentCycle(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	exportProto(t, r, protoSpan(1, 1, 2, "a"), protoSpan(1, 2, 1, "b"), protoSpan(1, 3, 3, "self"))
	tr := r.Trace(traceIDOf(1))
	a, _ := tr.Span(traceIDOf(1), spanIDOf(1))
	c, _ := tr.Span(traceIDOf(1), spanIDOf(3))
	assert.True(t, tr.IsDescendant(a, a))
	assert.False(t, tr.IsDescendant(c, a))
	assert.Empty(t, tr.Roots())
	out := tr.String()
	for _, name := range []string{`"a"`, `"b"`, `"self"`} {
		assert.Contains(t, out, name, "every span is drawn")
	}
}

// TestMaxSpans: spans past the bound are counted, not kept.
func TestMaxSpans(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{MaxSpans: 2})
	exportProto(t, r, protoSpan(1, 1, 0, "a"), protoSpan(1, 2, 1, "b"), protoSpan(1, 3, 1, "c"))
	exportProto(t, r, protoSpan(1, 4, 1, "d"))
	assert.Equal(t, []string{"a", "b"}, names(r.Spans()))
	assert.Equal(t, 2, r.Dropped())
	assert.Equal(t, 2, r.Exports(otlp.HTTP))

	_, err := otlp.Start(otlp.Options{MaxSpans: -1})
	assert.ErrorContains(t, err, "negative")
}

// TestHTTPRefusals: what is not an OTLP/HTTP protobuf export is refused
// with the status an exporter understands, and nothing is stored.
func TestHTTPRefusals(t *testing.T) {
	r := otlp.StartT(t, otlp.Options{})
	valid, err := proto.Marshal(exportRequest(protoSpan(1, 1, 0, "a")))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, method, path, contentType, encoding string
		body                                      []byte
		want                                      int
	}{
		{"GET", http.MethodGet, otlp.TracesPath, "", "", nil, http.StatusMethodNotAllowed},
		{"JSON", http.MethodPost, otlp.TracesPath, "application/json", "", []byte(`{}`), http.StatusUnsupportedMediaType},
		{"not protobuf", http.MethodPost, otlp.TracesPath, "application/x-protobuf", "", []byte("\xff\xff\xff"), http.StatusBadRequest},
		{"not gzip", http.MethodPost, otlp.TracesPath, "application/x-protobuf", "gzip", valid, http.StatusBadRequest},
		{"unknown encoding", http.MethodPost, otlp.TracesPath, "application/x-protobuf", "br", valid, http.StatusUnsupportedMediaType},
		{"metrics", http.MethodPost, "/v1/metrics", "application/x-protobuf", "", valid, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _ := post(t, r.HTTPEndpoint()+tc.path, tc.method, tc.contentType, tc.encoding, tc.body)
			assert.Equal(t, tc.want, code)
		})
	}
	assert.Empty(t, r.Spans())
	assert.Zero(t, r.Exports(otlp.HTTP))

	t.Run("gzip protobuf is answered with an ExportTraceServiceResponse", func(t *testing.T) {
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		_, err := zw.Write(valid)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		code, body := post(t, r.HTTPTracesURL(), http.MethodPost, "application/x-protobuf", "gzip", zipped.Bytes())
		require.Equal(t, http.StatusOK, code)
		require.NoError(t, proto.Unmarshal(body, &collectortracepb.ExportTraceServiceResponse{}))
		assert.Equal(t, []string{"a"}, names(r.Spans()))
	})
}

// TestStop: Stop is idempotent, ends the listeners, and keeps the spans.
func TestStop(t *testing.T) {
	r, err := otlp.Start(otlp.Options{})
	require.NoError(t, err)
	exportProto(t, r, protoSpan(1, 1, 0, "a"))
	r.Stop()
	r.Stop()
	assert.Len(t, r.Spans(), 1)
	client := &http.Client{Timeout: 5 * time.Second}
	_, err = client.Post(r.HTTPTracesURL(), "application/x-protobuf", bytes.NewReader(nil)) //nolint:bodyclose // it fails
	assert.Error(t, err)
}

// --- helpers building OTLP messages by hand, for what the SDK never sends.

func traceBytes(n byte) []byte {
	b := make([]byte, 16)
	b[15] = n
	return b
}

func spanBytes(n byte) []byte {
	b := make([]byte, 8)
	b[7] = n
	return b
}

func traceIDOf(n byte) otlp.TraceID { return otlp.TraceID(traceBytes(n)) }

func spanIDOf(n byte) otlp.SpanID { return otlp.SpanID(spanBytes(n)) }

// protoSpan is a span of trace tr with ID id, its parent's ID (0 for a
// root) and name; it starts at id seconds after a fixed time.
func protoSpan(tr, id, parent byte, name string) *tracepb.Span {
	start := uint64(time.Date(2026, 1, 1, 0, 0, int(id), 0, time.UTC).UnixNano()) //nolint:gosec // positive
	s := &tracepb.Span{TraceId: traceBytes(tr), SpanId: spanBytes(id), Name: name, StartTimeUnixNano: start, EndTimeUnixNano: start + 1000}
	if parent != 0 {
		s.ParentSpanId = spanBytes(parent)
	}
	return s
}

func exportRequest(spans ...*tracepb.Span) *collectortracepb.ExportTraceServiceRequest {
	return &collectortracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

// exportProto posts the spans of service "test" over OTLP/HTTP and checks
// the answer.
func exportProto(t *testing.T, r *otlp.Receiver, spans ...*tracepb.Span) {
	t.Helper()
	req := exportRequest(spans...)
	req.ResourceSpans[0].Resource = resourceOf("test")
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	code, _ := post(t, r.HTTPTracesURL(), http.MethodPost, "application/x-protobuf", "", body)
	require.Equal(t, http.StatusOK, code)
}

func post(t *testing.T, url, method, contentType, encoding string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	client := &http.Client{Timeout: waitTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	return resp.StatusCode, data
}

func resourceOf(service string) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{
		Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}},
	}}}
}

func names(spans []otlp.Span) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
