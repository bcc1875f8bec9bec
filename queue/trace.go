package queue

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Tracing reports whether the controller traces its reconciles
// (WithTracing), and so records triggers: it implements
// tracing.Recorder.
func (c *Controller[K]) Tracing() bool { return c.cfg.tracer != nil }

// Trigger records t as something that set off key's next reconcile, for
// its span (see WithTracing); without tracing it does nothing. Sources of
// keys call it just before they add the key. A key keeps at most
// tracing.MaxTriggers triggers until its next reconcile starts (those
// linked to a sampled span first, then those with a link, and always the
// latest; see tracing.MaxTriggers), and counts the others; it keeps them
// only while tracing is on, and only for keys this process owns (see
// Restrict), whose adds are accepted: the trigger of a key another
// replica owns is dropped, like its add. The
// triggers of a key go to the reconcile that runs under the key's claims;
// a key whose claim is refused at its turn keeps them while it is still
// owned (its Ownership holds it, or queues it again, for later) and loses
// them when it is dropped, as does a key whose add is dropped and a key a
// source drops (ForgetTriggers). Their memory is so bounded by the keys
// that wait here, held ones included, and the owned keys an Ownership
// refused without queuing them again.
func (c *Controller[K]) Trigger(key K, t tracing.Trigger) {
	if c.cfg.tracer == nil || !c.owns(key) {
		return
	}
	c.triggerMu.Lock()
	defer c.triggerMu.Unlock()
	p := c.triggers[key]
	if p == nil {
		if c.triggers == nil {
			c.triggers = map[K]*pendingTriggers{}
		}
		p = &pendingTriggers{}
		c.triggers[key] = p
	}
	p.count++
	p.last = t
	p.keep(t)
}

// pendingTriggers are the triggers of one key since its last reconcile
// started.
type pendingTriggers struct {
	kept  []tracing.Trigger // at most tracing.MaxTriggers, in the order they came
	last  tracing.Trigger
	count int
}

// keep adds t, the latest trigger, to the kept ones. When they are
// tracing.MaxTriggers already, it drops the one that tells least: a
// trigger without a link before one linked to a span that was not
// sampled, and that before one linked to a sampled span (the sampler
// follows those); among triggers alike, the latest kept one, so that the
// first ones stay. t itself is always kept, so that the latest trigger is
// a link too.
func (p *pendingTriggers) keep(t tracing.Trigger) {
	if len(p.kept) < tracing.MaxTriggers {
		p.kept = append(p.kept, t)
		return
	}
	victim := len(p.kept) - 1
	for i := len(p.kept) - 2; i >= 0; i-- {
		if linkRank(p.kept[i]) < linkRank(p.kept[victim]) {
			victim = i
		}
	}
	copy(p.kept[victim:], p.kept[victim+1:])
	p.kept[len(p.kept)-1] = t
}

// linkRank orders triggers by what their link tells the sampler: 0 for no
// link, 1 for a link to a span that was not sampled, 2 for a link to a
// sampled span.
func linkRank(t tracing.Trigger) int {
	switch {
	case !t.Link.IsValid():
		return 0
	case !t.Link.IsSampled():
		return 1
	default:
		return 2
	}
}

// ForgetTriggers drops the triggers recorded for key (see Trigger). A
// source that holds keys back and adds them later, such as the Fleet of
// package queue/multicluster, calls it when it drops a key it held rather
// than adding it, so that the triggers of keys that will not be
// reconciled do not stay, nor show up in a later reconcile of the key.
// Without tracing it does nothing.
func (c *Controller[K]) ForgetTriggers(key K) {
	if c.cfg.tracer == nil {
		return
	}
	c.takeTriggers(key)
}

// takeTriggers removes and returns the triggers recorded for key, nil if
// none.
func (c *Controller[K]) takeTriggers(key K) *pendingTriggers {
	c.triggerMu.Lock()
	defer c.triggerMu.Unlock()
	p := c.triggers[key]
	if p != nil {
		delete(c.triggers, key)
	}
	return p
}

// reconcileSpan is the span of one traced reconcile.
type reconcileSpan struct {
	span  trace.Span
	wrote func() bool
}

// startSpan starts the span of key's reconcile, a new root linked to its
// triggers, and returns ctx carrying it and a mark for the reconcile's
// writes.
func (c *Controller[K]) startSpan(ctx context.Context, key K, triggers *pendingTriggers) (context.Context, *reconcileSpan) {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		tracing.AttrController.String(validUTF8(c.name)),
		tracing.AttrKey.String(validUTF8(keyString(key))),
		tracing.AttrAttempt.Int(c.rateLimiter.NumRequeues(key)+1),
	)
	if ck, ok := any(key).(tracing.ClusterKey); ok {
		attrs = append(attrs, tracing.AttrCluster.String(validUTF8(ck.ClusterName())))
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal)}
	if triggers != nil {
		attrs = append(attrs, tracing.AttrTriggers.Int(triggers.count))
		if dropped := triggers.count - len(triggers.kept); dropped > 0 {
			attrs = append(attrs, tracing.AttrTriggersDropped.Int(dropped))
		}
		attrs = append(attrs, triggers.last.Attributes()...)
		links := make([]trace.Link, 0, len(triggers.kept))
		for _, t := range triggers.kept {
			links = append(links, trace.Link{SpanContext: t.Link, Attributes: t.Attributes()})
		}
		opts = append(opts, trace.WithLinks(links...))
	} else {
		attrs = append(attrs, tracing.AttrTriggers.Int(0))
	}
	opts = append(opts, trace.WithAttributes(attrs...))
	ctx, span := c.cfg.tracer.Start(ctx, "Reconcile "+validUTF8(c.name), opts...)
	ctx, wrote := tracing.WithWriteMark(ctx)
	return ctx, &reconcileSpan{span: span, wrote: wrote}
}

// end ends the span with how the reconcile ended.
func (s *reconcileSpan) end(res spanEnd) {
	err := res.err
	attrs := []attribute.KeyValue{
		tracing.AttrResult.String(res.result),
		tracing.AttrRequeue.Bool(res.requeue),
		tracing.AttrWrote.Bool(s.wrote()),
	}
	if res.after > 0 {
		attrs = append(attrs, tracing.AttrRequeueAfter.String(res.after.String()))
	}
	s.span.SetAttributes(attrs...)
	switch {
	case err == nil || res.result == tracing.ResultCancelled:
	case res.result == tracing.ResultStale:
		// A cache behind the controller's own write is not a failure:
		// the error is told as an event, and the span's status is left.
		s.span.AddEvent("stale cache", trace.WithAttributes(attribute.String("message", validUTF8(err.Error()))))
	default:
		// The error's text as RecordError records it, made valid UTF-8.
		msg := validUTF8(err.Error())
		s.span.AddEvent("exception", trace.WithAttributes(
			attribute.String("exception.type", validUTF8(errorType(err))),
			attribute.String("exception.message", msg),
		))
		s.span.SetStatus(codes.Error, msg)
	}
	s.span.End()
}

// spanEnd is how a traced reconcile ended, for its span.
type spanEnd struct {
	result  string
	requeue bool
	after   time.Duration
	err     error
}

// traceDue records the trigger of key's delay (AddAfter,
// Result.RequeueAfter) or, with retry, of its retry after a failed
// reconcile, as the key becomes due.
func (c *Controller[K]) traceDue(key K, retry bool) {
	src := tracing.SourceAfter
	if retry {
		src = tracing.SourceRetry
	}
	c.Trigger(key, tracing.Trigger{Source: src})
}

// validUTF8 returns s with each run of bytes that are not valid UTF-8
// replaced by U+FFFD: OTLP's strings must be UTF-8, and one string that
// is not makes the encoding of the whole export batch fail, losing the
// spans of every other reconcile in it. A valid s is returned as it is,
// without allocating.
func validUTF8(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}

// errorType names the type of err for an exception event, as the
// OpenTelemetry SDK's RecordError does: its package path and name.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		// Pointers and other unnamed types.
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// keyString writes a key for its span: its String method, or fmt's.
func keyString[K comparable](key K) string {
	if s, ok := any(key).(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(key)
}
