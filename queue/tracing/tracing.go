// Package tracing holds what the traces of ctrlkit's controllers are made
// of: the triggers that set a reconcile off, the annotation that carries a
// write's trace context to the reconciles its event sets off, the client
// transport whose requests join a reconcile's trace, and the sampler and
// span processor that shape what is exported. It uses OpenTelemetry's
// types only and keeps no global state: a controller traces when it is
// given a trace.TracerProvider with queue.WithTracing, and nothing here
// reads or sets otel's global provider or propagator.
//
// A reconcile's span names the controller, the key (and a fleet key's
// cluster), how it ended and what set it off: every trigger recorded for
// the key since its last reconcile started is a link of the span (at most
// MaxTriggers; the span counts the others), and the latest one is also in
// the span's own attributes. A trigger of an informer event carries the
// trace context of the write that caused the event, read from the object's
// Annotation, as its link's span context, so the reconcile links to the
// span of that write, also in another controller or operator.
//
// Where to start: queue.WithTracing traces a controller's reconciles
// (ExampleWithTracing of package queue); WrapConfig (or Transport) traces
// its clients' requests; FollowLinks and DropEmpty shape what a provider
// samples and exports (Example, ExampleDropEmpty); operator.Flags does all
// of it from --tracing-endpoint and the OTEL_* variables. The examples are
// in the package's documentation on pkg.go.dev (go doc does not print
// examples; go test -run Example -v runs them).
//
// See docs/tracing.md for the trace of a Foo, how to export it, and how to
// test traces with fake clientsets.
package tracing

import (
	"context"
	"maps"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation is the annotation that carries the trace context of the
// write that last changed an object, as a W3C traceparent value (the
// shape of the Kubernetes enhancement proposal for traces across
// objects). SetAnnotation writes it; the handlers of package informer read
// it from the objects of their events.
const Annotation = "tracing.k8s.io/traceparent"

// ScopeName is the instrumentation scope of ctrlkit's reconcile spans.
const ScopeName = "github.com/ctrlkit/ctrlkit/queue"

// MaxTriggers bounds the triggers a controller keeps for one key until its
// next reconcile starts; the kept ones become the links of the
// reconcile's span and the span's ctrlkit.triggers.dropped attribute
// counts the others. Beyond the bound, triggers with a link to a sampled
// span are kept ahead of those with a link to a span that was not
// sampled, and those ahead of triggers without a link, so that a sampler
// that follows links (FollowLinks) sees the sampled writes that set the
// reconcile off; among triggers alike the first ones are kept. The latest
// trigger is always kept, and is also in the span's own attributes.
const MaxTriggers = 16

// Event is the kind of informer event that set a reconcile off.
type Event string

// The informer events.
const (
	// EventAdd: an object appeared after the informer's initial list,
	// also an object new in a relist after a watch could not resume.
	EventAdd Event = "add"
	// EventInitialList: an object of the informer's initial list, before
	// its first sync (client-go's isInInitialList). A relist after a
	// watch could not resume is not one: its objects show as adds and
	// updates.
	EventInitialList Event = "initial-list"
	// EventUpdate: an object changed (its resourceVersion did).
	EventUpdate Event = "update"
	// EventResync: an update with an unchanged resourceVersion, from the
	// informer's resync.
	EventResync Event = "resync"
	// EventDelete: an object was deleted.
	EventDelete Event = "delete"
)

// Source is what mapped an event or a tick to the key.
type Source string

// The sources of keys.
const (
	// SourceObject: the event's object is the key's own object
	// (informer.EnqueueHandler).
	SourceObject Source = "object"
	// SourceOwner: the event's object is controlled by the key's object
	// (owner.EnqueueOwner).
	SourceOwner Source = "owner"
	// SourceMapped: a mapping function of the controller
	// (informer.EnqueueMappedHandler).
	SourceMapped Source = "mapped"
	// SourceIndex: the key's object refers to the event's object through
	// an index (informer.EnqueueByIndex).
	SourceIndex Source = "index"
	// SourcePeriodic: a tick of a queue.Periodic source.
	SourcePeriodic Source = "periodic"
	// SourceAfter: a delay asked for, with AddAfter or
	// Result.RequeueAfter.
	SourceAfter Source = "after"
	// SourceRetry: the retry of a failed reconcile, after its backoff.
	SourceRetry Source = "retry"
	// SourceChannel: a value of a queue.Channel source.
	SourceChannel Source = "channel"
	// SourceMembers: a change of a fleet's membership or of a member's
	// readiness (multicluster.OnMembers).
	SourceMembers Source = "members"
)

// Trigger is one thing that set a key's reconcile off.
type Trigger struct {
	// Event is the informer event; empty for sources without one.
	Event Event
	// Source is what mapped the event or tick to the key.
	Source Source
	// Object is the namespace/name of the event's object (the name alone
	// for a cluster-scoped object, the cluster's name for SourceMembers);
	// empty for sources without an object.
	Object string
	// ResourceVersion is the resourceVersion of the event's object as
	// the informer saw it.
	ResourceVersion string
	// Link is the span context of the write that caused the event, read
	// from the object's Annotation; invalid when there is none.
	Link trace.SpanContext
}

// Recorder is implemented by the queues that trace their reconciles, such
// as *queue.Controller: the sources of keys call Trigger before they add a
// key, so that the key's next reconcile names what set it off. Tracing
// reports whether the queue records triggers at all; a source asks it
// first and builds no Trigger when it is false, so that triggers cost
// nothing without tracing.
type Recorder[K comparable] interface {
	Tracing() bool
	Trigger(key K, t Trigger)
}

// RecorderOf returns q as a Recorder of K when it records triggers (its
// Tracing reports true now), and nil otherwise. A source calls it where
// it would record, not once for all: a queue may be wrapped or set up
// later.
func RecorderOf[K comparable](q any) Recorder[K] {
	if r, ok := q.(Recorder[K]); ok && r.Tracing() {
		return r
	}
	return nil
}

// ObjectTrigger returns the Trigger of an informer event of obj: its
// namespace/name, resourceVersion, and, when withLink is set, the span
// context of obj's Annotation. Handlers set withLink only when the
// annotation is new in the event (an add, or an update that changed it),
// so that a later change by someone else does not link to an old write.
func ObjectTrigger(event Event, source Source, obj metav1.Object, withLink bool) Trigger {
	t := Trigger{Event: event, Source: source, ResourceVersion: obj.GetResourceVersion()}
	if ns := obj.GetNamespace(); ns != "" {
		t.Object = ns + "/" + obj.GetName()
	} else {
		t.Object = obj.GetName()
	}
	if withLink {
		t.Link = SpanContextOf(obj)
	}
	return t
}

// SpanContextOf returns the span context that obj's Annotation carries,
// as a remote span context; it is invalid when obj has no valid one.
func SpanContextOf(obj metav1.Object) trace.SpanContext {
	v, ok := obj.GetAnnotations()[Annotation]
	if !ok || v == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": v})
	return trace.SpanContextFromContext(ctx)
}

// Traceparent returns the W3C traceparent value of the span in ctx, or ""
// when ctx carries no valid span context.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// SetAnnotation sets obj's Annotation to the trace context of the span in
// ctx and reports whether it did: not when ctx carries no valid span
// context (tracing is off, or the reconcile is not traced). Call it only
// for a write that is sent anyway because something else changed (package
// reconcile/write does so): an annotation that alone made a write would
// make every reconcile write, and the event of every write set off the
// next reconcile.
func SetAnnotation(ctx context.Context, obj metav1.Object) bool {
	tp := Traceparent(ctx)
	if tp == "" {
		return false
	}
	ann := maps.Clone(obj.GetAnnotations()) // the map may be shared
	if ann == nil {
		ann = map[string]string{}
	}
	ann[Annotation] = tp
	obj.SetAnnotations(ann)
	return true
}

// writes notes that a reconcile wrote: the context of a traced reconcile
// carries one, and MarkWrite marks it, from any goroutine.
type writes struct{ wrote atomic.Bool }

type writesKey struct{}

// WithWriteMark returns ctx with a fresh mark for MarkWrite, and a
// function that reports whether a write was marked through the context
// (or one derived from it) since. The queue gives every traced reconcile
// one.
func WithWriteMark(ctx context.Context) (context.Context, func() bool) {
	w := &writes{}
	return context.WithValue(ctx, writesKey{}, w), w.wrote.Load
}

// MarkWrite records that the reconcile of ctx sent a write (a create,
// update, patch or delete) to the API server. The transport of Transport
// and package reconcile/write call it; it does nothing when ctx carries
// no mark (tracing is off).
func MarkWrite(ctx context.Context) {
	if w, ok := ctx.Value(writesKey{}).(*writes); ok {
		w.wrote.Store(true)
	}
}

// isWrite reports whether an HTTP method changes something.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "":
		return false
	}
	return true
}
