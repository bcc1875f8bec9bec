package tracing

import (
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FollowLinks returns a sampler for spans without a parent, such as
// reconcile spans, that follows the decisions of the spans they link to:
// a span with a link to a sampled span is sampled; a span whose links are
// all to spans that were not sampled is not; a span without links to
// spans (only to triggers without a trace context, or none) is left to
// root. Combined as sdktrace.ParentBased(FollowLinks(root)), a span with a
// parent follows its parent, a reconcile follows the writes that set it
// off, and root decides for the rest:
//
//	sampler := sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(0.1)))
//
// so a trace that was sampled at its start is kept whole across the
// objects it reaches, and one that was not costs nothing downstream.
func FollowLinks(root sdktrace.Sampler) sdktrace.Sampler {
	return followLinks{root: root}
}

type followLinks struct{ root sdktrace.Sampler }

func (f followLinks) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	linked := false
	for _, l := range p.Links {
		if !l.SpanContext.IsValid() {
			continue
		}
		if l.SpanContext.IsSampled() {
			return sdktrace.SamplingResult{
				Decision:   sdktrace.RecordAndSample,
				Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState(),
			}
		}
		linked = true
	}
	if linked {
		return sdktrace.SamplingResult{
			Decision:   sdktrace.Drop,
			Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState(),
		}
	}
	return f.root.ShouldSample(p)
}

func (f followLinks) Description() string {
	return "FollowLinks{" + f.root.Description() + "}"
}

// DropEmpty returns a span processor that passes every span to next
// except the spans of reconciles that wrote nothing (their attribute
// AttrWrote is false) and ended without an error. Use it in place of
// next when the reconciles that found nothing to do are noise:
//
//	tp := sdktrace.NewTracerProvider(
//		sdktrace.WithSampler(sampler),
//		sdktrace.WithSpanProcessor(tracing.DropEmpty(sdktrace.NewBatchSpanProcessor(exporter))),
//	)
//
// Only the reconcile's own span is dropped: the client spans of its reads,
// sampled with it, are still exported, without their parent.
func DropEmpty(next sdktrace.SpanProcessor) sdktrace.SpanProcessor {
	return dropEmpty{next}
}

type dropEmpty struct{ sdktrace.SpanProcessor }

func (d dropEmpty) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Status().Code != codes.Error && s.InstrumentationScope().Name == ScopeName {
		for _, a := range s.Attributes() {
			if a.Key == AttrWrote && !a.Value.AsBool() {
				return
			}
		}
	}
	d.SpanProcessor.OnEnd(s)
}
