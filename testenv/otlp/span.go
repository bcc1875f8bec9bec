package otlp

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TraceID is OpenTelemetry's trace ID: a span's trace ID compares equal to
// the one of the SDK's SpanContext that recorded it.
type TraceID = trace.TraceID

// SpanID is OpenTelemetry's span ID.
type SpanID = trace.SpanID

// ServiceNameKey is the resource attribute that names the service that
// exported a span.
const ServiceNameKey = "service.name"

// Span is one span as it was received, with its attribute values turned
// into Go values: string, bool, int64, float64, []byte, []any (arrays) and
// map[string]any (key-value lists).
type Span struct {
	TraceID TraceID
	SpanID  SpanID
	// ParentSpanID is zero for the root of a trace.
	ParentSpanID SpanID
	// TraceState is the W3C tracestate of the span's context.
	TraceState string
	Name       string
	Kind       trace.SpanKind
	Start, End time.Time
	Attributes map[string]any
	Events     []Event
	Links      []Link
	Status     Status
	// Resource holds the attributes of the exporting process.
	Resource map[string]any
	// Service is the resource's service.name ("apiserver" for
	// kube-apiserver).
	Service string
	// Scope and ScopeVersion name the instrumentation scope (the tracer).
	Scope, ScopeVersion string
	// Protocol is the transport the span arrived by.
	Protocol Protocol
}

// Event is a span event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes map[string]any
}

// Link is a span's link to another span, possibly of another trace.
type Link struct {
	TraceID    TraceID
	SpanID     SpanID
	TraceState string
	Attributes map[string]any
}

// Status is a span's status.
type Status struct {
	Code    codes.Code
	Message string
}

// IsRoot reports whether the span has no parent.
func (s Span) IsRoot() bool { return !s.ParentSpanID.IsValid() }

// LinksTo reports whether one of the span's links points at the span
// (traceID, spanID).
func (s Span) LinksTo(traceID TraceID, spanID SpanID) bool {
	return slices.ContainsFunc(s.Links, func(l Link) bool { return l.TraceID == traceID && l.SpanID == spanID })
}

// String is one line: service, name, kind, IDs, parent and links.
func (s Span) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q (%s) trace %s span %s", s.Service, s.Name, s.Kind, s.TraceID, s.SpanID)
	if !s.IsRoot() {
		fmt.Fprintf(&b, " parent %s", s.ParentSpanID)
	}
	for _, l := range s.Links {
		fmt.Fprintf(&b, " link %s/%s", l.TraceID, l.SpanID)
	}
	if s.Status.Code == codes.Error {
		fmt.Fprintf(&b, " error %q", s.Status.Message)
	}
	return b.String()
}

// Match is a condition on a span; a list of them holds when each does.
type Match func(Span) bool

// Name matches spans with this name.
func Name(name string) Match { return func(s Span) bool { return s.Name == name } }

// NamePrefix matches spans whose name starts with prefix.
func NamePrefix(prefix string) Match {
	return func(s Span) bool { return strings.HasPrefix(s.Name, prefix) }
}

// Service matches spans exported by the service of this service.name.
func Service(name string) Match { return func(s Span) bool { return s.Service == name } }

// Kind matches spans of this kind.
func Kind(k trace.SpanKind) Match { return func(s Span) bool { return s.Kind == k } }

// InTrace matches the spans of one trace.
func InTrace(id TraceID) Match { return func(s Span) bool { return s.TraceID == id } }

// ChildOf matches the children of the span (traceID, spanID).
func ChildOf(traceID TraceID, spanID SpanID) Match {
	return func(s Span) bool { return s.TraceID == traceID && s.ParentSpanID == spanID }
}

// LinksTo matches spans with a link to the span (traceID, spanID).
func LinksTo(traceID TraceID, spanID SpanID) Match {
	return func(s Span) bool { return s.LinksTo(traceID, spanID) }
}

// HasAttr matches spans that have the attribute key, whatever its value.
func HasAttr(key string) Match {
	return func(s Span) bool { _, ok := s.Attributes[key]; return ok }
}

// Attr matches spans whose attribute key equals value. Integers of any Go
// type compare as int64, float32 as float64 and slices as []any, so
// Attr("http.response.status_code", 201) matches the int64 201 of the
// wire.
func Attr(key string, value any) Match {
	want := normalize(value)
	return func(s Span) bool {
		got, ok := s.Attributes[key]
		return ok && reflect.DeepEqual(got, want)
	}
}

// AttrFunc matches spans that have the attribute key and whose value makes
// f true.
func AttrFunc(key string, f func(any) bool) Match {
	return func(s Span) bool {
		got, ok := s.Attributes[key]
		return ok && f(got)
	}
}

// Not matches the spans m does not match.
func Not(m Match) Match { return func(s Span) bool { return !m(s) } }

// Any matches spans that one of matches matches.
func Any(matches ...Match) Match {
	return func(s Span) bool {
		return slices.ContainsFunc(matches, func(m Match) bool { return m(s) })
	}
}

// normalize turns value into the Go type an attribute of the wire has.
func normalize(value any) any {
	v := reflect.ValueOf(value)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(v.Uint()) //nolint:gosec // attribute values in tests are small
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	case reflect.Slice, reflect.Array:
		if b, ok := value.([]byte); ok {
			return b
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = normalize(v.Index(i).Interface())
		}
		return out
	}
	return value
}

// convert flattens an export into spans.
func convert(p Protocol, req *collectortracepb.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		service, _ := res[ServiceNameKey].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, Span{
					TraceID:      traceID(sp.GetTraceId()),
					SpanID:       spanID(sp.GetSpanId()),
					ParentSpanID: spanID(sp.GetParentSpanId()),
					TraceState:   sp.GetTraceState(),
					Name:         sp.GetName(),
					Kind:         trace.SpanKind(sp.GetKind()),
					Start:        unixNano(sp.GetStartTimeUnixNano()),
					End:          unixNano(sp.GetEndTimeUnixNano()),
					Attributes:   attributes(sp.GetAttributes()),
					Events:       events(sp.GetEvents()),
					Links:        links(sp.GetLinks()),
					Status:       status(sp.GetStatus()),
					Resource:     res,
					Service:      service,
					Scope:        ss.GetScope().GetName(),
					ScopeVersion: ss.GetScope().GetVersion(),
					Protocol:     p,
				})
			}
		}
	}
	return out
}

// spanID reads an ID of 8 bytes; anything else (an absent parent) is the
// zero ID.
func spanID(b []byte) SpanID {
	var id SpanID
	if len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}

func traceID(b []byte) TraceID {
	var id TraceID
	if len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}

func unixNano(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)) //nolint:gosec // nanoseconds since 1970 fit until 2262
}

func events(in []*tracepb.Span_Event) []Event {
	out := make([]Event, 0, len(in))
	for _, e := range in {
		out = append(out, Event{Name: e.GetName(), Time: unixNano(e.GetTimeUnixNano()), Attributes: attributes(e.GetAttributes())})
	}
	return out
}

func links(in []*tracepb.Span_Link) []Link {
	out := make([]Link, 0, len(in))
	for _, l := range in {
		out = append(out, Link{
			TraceID:    traceID(l.GetTraceId()),
			SpanID:     spanID(l.GetSpanId()),
			TraceState: l.GetTraceState(),
			Attributes: attributes(l.GetAttributes()),
		})
	}
	return out
}

func status(s *tracepb.Status) Status {
	st := Status{Message: s.GetMessage()}
	switch s.GetCode() {
	case tracepb.Status_STATUS_CODE_OK:
		st.Code = codes.Ok
	case tracepb.Status_STATUS_CODE_ERROR:
		st.Code = codes.Error
	default:
		st.Code = codes.Unset
	}
	return st
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		vs := x.ArrayValue.GetValues()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = value(e)
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attributes(x.KvlistValue.GetValues())
	}
	return nil
}
