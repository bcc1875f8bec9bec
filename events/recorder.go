// Package events wires a Kubernetes event recorder for a controller in one
// call.
//
// NewRecorder builds a client-go event broadcaster, sends its events to the
// API server through the core/v1 Events client, logs every event through the
// contextual logger, knows the Go types of the objects events are recorded
// for, and shuts everything down when the given context ends. The result is
// a plain record.EventRecorderLogger, the interface sample-controller style
// controllers already use:
//
//	recorder, err := events.NewRecorder(ctx, kubeClient, "foo-controller",
//		events.WithAddToScheme(samplev1alpha1.AddToScheme))
//	if err != nil {
//		return err
//	}
//	recorder.Event(foo, corev1.EventTypeNormal, "Synced", "Foo synced successfully")
//
// By default events go to the core/v1 Events API; WithEventsAPI sends them
// to events.k8s.io/v1 instead, through client-go's tools/events, behind the
// same recorder interface.
//
// Events are written in the background. An event the API server refuses
// for a reason that may pass (denied while it restarts and fills its
// authorization caches, throttled, unavailable, timed out, an internal
// error) is tried again as client-go's recorders try an unreachable server
// again: at most 12 times, about 10 s apart, each failure logged; an event
// refused for good (invalid) is dropped at once, logged. A recorder
// without RBAC for events so logs each event 12 times. This holds for
// both APIs.
//
// # RBAC
//
// The recorder needs create and patch on events: in the core group ("")
// by default, in the events.k8s.io group with WithEventsAPI, in every
// namespace it records events for (or cluster-wide).
//
// Tests that only need to see which events were recorded use the
// events/eventstest package instead.
package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	toolsevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
)

// DefaultLogVerbosity is the verbosity at which every recorded event is logged
// unless WithLogVerbosity says otherwise.
const DefaultLogVerbosity klog.Level = 0

// Option configures NewRecorder. A nil Option is ignored.
type Option func(*options)

type options struct {
	schemes      []*runtime.Scheme
	addToScheme  []func(*runtime.Scheme) error
	correlator   record.CorrelatorOptions
	logVerbosity klog.Level
	host         string
	eventsAPI    bool
	coreOnly     []string // options given that only the core/v1 path has
}

// WithScheme makes the types registered in s known to the recorder, so that
// events can be recorded for them. s is only read: its types are copied into
// the recorder's own scheme (those of client-go's kubernetes clientset,
// which the recorder always knows, are not). A type that s registers under
// a group, version and kind the recorder already maps to a different Go
// type makes NewRecorder fail. The option may be given more than once.
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) { o.schemes = append(o.schemes, s) }
}

// WithAddToScheme registers types in the recorder's own scheme by calling
// each fn on it, typically the generated AddToScheme of an API group such as
// samplev1alpha1.AddToScheme. No global scheme is modified. An error from any
// fn makes NewRecorder fail. The option may be given more than once.
func WithAddToScheme(fns ...func(*runtime.Scheme) error) Option {
	return func(o *options) { o.addToScheme = append(o.addToScheme, fns...) }
}

// WithCorrelatorOptions sets how the broadcaster aggregates similar events and
// rate limits them before they reach the API server. The zero value, the
// default, uses client-go's defaults.
func WithCorrelatorOptions(c record.CorrelatorOptions) Option {
	return func(o *options) {
		o.correlator = c
		o.coreOnly = append(o.coreOnly, "WithCorrelatorOptions")
	}
}

// WithLogVerbosity sets the verbosity at which each event is logged through
// the contextual logger. The default is DefaultLogVerbosity.
func WithLogVerbosity(v klog.Level) Option {
	return func(o *options) { o.logVerbosity = v }
}

// WithHost sets the host recorded as the events' source and reporting
// instance, usually the pod or node name. It is empty by default.
func WithHost(host string) Option {
	return func(o *options) {
		o.host = host
		o.coreOnly = append(o.coreOnly, "WithHost")
	}
}

// WithEventsAPI records events through the events.k8s.io/v1 API (client-go's
// tools/events) instead of core/v1. The recorder's interface stays
// record.EventRecorderLogger: each event's action (a field only
// events.k8s.io has) is its reason, and annotations are kept. Repeated
// events become an event series, which tools/events maintains; the
// reporting instance is the component and the host name. It cannot be
// combined with WithCorrelatorOptions or WithHost, which belong to the
// core/v1 path.
func WithEventsAPI() Option {
	return func(o *options) { o.eventsAPI = true }
}

// NewRecorder returns an event recorder for component (for example
// "foo-controller") that is backed by a new broadcaster:
//
//   - every event is written to the API server through
//     client.CoreV1().Events, after client-go's aggregation and spam
//     filtering (see WithCorrelatorOptions);
//   - every event is logged through klog.FromContext(ctx) with the message
//     "Event occurred" at the verbosity set by WithLogVerbosity;
//   - the recorder builds object references for the types given by
//     WithScheme and WithAddToScheme, which it keeps in a scheme of its own,
//     and for client-go's kubernetes types, which it finds in client-go's
//     scheme (only read). Recording an event for a type it does not know
//     logs an error through the contextual logger and records nothing; it
//     never panics;
//   - errors of the recorder itself are logged through klog.FromContext(ctx),
//     or through the logger passed to the recorder's WithLogger.
//
// Recording does not wait for the API server, and an event may be lost on
// its way there without a trace. client-go's broadcaster takes each event
// into a queue of up to 1000 and copies it from there into a buffer of
// 1000 events for each of its two consumers, the API writer and the
// logger. The API writer writes one event at a time and retries a failed
// write up to 12 times, about 10 seconds apart; while it is behind, for
// example because the API server is down, its buffer fills up and the
// events that do not fit are dropped silently, although they are still
// logged. A logger that falls behind loses events from the log the same
// way. Only when the first queue is full, which the copying goroutine
// rarely lets happen, is the dropped event logged as an error. The
// aggregation and spam filtering merge or drop similar events silently
// too.
//
// With WithEventsAPI (client-go's tools/events) each recorded event is
// handed to a goroutine of its own, which waits until the broadcaster
// takes it: recording never waits and nothing is dropped before the
// buffers, but the events of a burst may be written in another order than
// they were recorded. The API writer starts another goroutine for every
// event, which writes it with the same retries; a slow API server
// therefore costs goroutines instead of events. The logger's buffer drops
// silently as above.
//
// No metric counts these losses: they happen inside client-go, whose
// broadcaster drops without telling the recorder, so this package cannot
// see them.
//
// When ctx ends, the broadcaster is shut down and its goroutines exit (an API
// request already under way is allowed to finish first). Events recorded
// from then on are dropped and logged at verbosity 4; events still queued or
// on their way to the API server at that moment may be lost as well.
// With a context that is never cancelled (context.Background) the broadcaster
// runs until the process exits.
//
// NewRecorder fails when client is nil, component is empty, ctx has already
// ended, or a scheme option fails. The returned recorder is safe for
// concurrent use.
func NewRecorder(ctx context.Context, client kubernetes.Interface, component string, opts ...Option) (record.EventRecorderLogger, error) {
	if client == nil {
		return nil, errors.New("events: client is nil")
	}
	if component == "" {
		return nil, errors.New("events: component is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("events: context already ended: %w", err)
	}
	o := options{logVerbosity: DefaultLogVerbosity}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	scheme, err := buildScheme(o.schemes, o.addToScheme)
	if err != nil {
		return nil, err
	}

	logger := klog.FromContext(ctx)
	if o.eventsAPI {
		if len(o.coreOnly) > 0 {
			return nil, fmt.Errorf("events: WithEventsAPI cannot be combined with %s", strings.Join(o.coreOnly, " or "))
		}
		return newEventsAPIRecorder(ctx, client, component, scheme, o.logVerbosity)
	}
	broadcaster := record.NewBroadcaster(
		record.WithContext(ctx),
		record.WithCorrelatorOptions(o.correlator),
	)
	broadcaster.StartStructuredLogging(o.logVerbosity)
	broadcaster.StartRecordingToSink(retryingSink{&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}})

	inner := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: component, Host: o.host})
	return &recorder{ctx: ctx, logger: logger, types: scheme, inner: inner.WithLogger(logger)}, nil
}

// buildScheme returns a new scheme with the types of every scheme in
// schemes and those added by addToScheme. client-go's kubernetes types are
// left out: a copy of them would take some 170 KB for each recorder, and
// the recorder finds them in client-go's scheme (see recorder.regarding).
func buildScheme(schemes []*runtime.Scheme, addToScheme []func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	known := maps.Clone(clientgoscheme.Scheme.AllKnownTypes()) // the scheme's own map
	for _, src := range schemes {
		if src == nil {
			return nil, errors.New("events: WithScheme: scheme is nil")
		}
		for gvk, typ := range src.AllKnownTypes() {
			if have, ok := known[gvk]; ok {
				if have != typ {
					return nil, fmt.Errorf("events: WithScheme: %v is registered as %v and as %v", gvk, have, typ)
				}
				continue
			}
			// A scheme only holds types whose pointer is a runtime.Object.
			scheme.AddKnownTypeWithName(gvk, reflect.New(typ).Interface().(runtime.Object))
			known[gvk] = typ
		}
	}
	for i, fn := range addToScheme {
		if fn == nil {
			return nil, fmt.Errorf("events: WithAddToScheme: function %d is nil", i)
		}
		if err := fn(scheme); err != nil {
			return nil, fmt.Errorf("events: WithAddToScheme: %w", err)
		}
	}
	return scheme, nil
}

// recorder drops events once its context has ended instead of handing them
// to a broadcaster that is shut down (which would log an error per event).
type recorder struct {
	ctx    context.Context
	logger klog.Logger
	types  *runtime.Scheme // the scheme inner was given
	inner  record.EventRecorderLogger
}

var _ record.EventRecorderLogger = (*recorder)(nil)

func (r *recorder) Event(object runtime.Object, eventtype, reason, message string) {
	if r.dropped(object, eventtype, reason) {
		return
	}
	r.inner.Event(r.regarding(object), eventtype, reason, message)
}

func (r *recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r.dropped(object, eventtype, reason) {
		return
	}
	r.inner.Eventf(r.regarding(object), eventtype, reason, messageFmt, args...)
}

func (r *recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r.dropped(object, eventtype, reason) {
		return
	}
	r.inner.AnnotatedEventf(r.regarding(object), annotations, eventtype, reason, messageFmt, args...)
}

func (r *recorder) WithLogger(logger klog.Logger) record.EventRecorderLogger {
	return &recorder{ctx: r.ctx, logger: logger, types: r.types, inner: r.inner.WithLogger(logger)}
}

// regarding returns what inner is given for object: object itself when
// r.types knows its type, a reference to it when client-go's scheme does,
// and otherwise object, for which inner logs that it cannot build a
// reference.
func (r *recorder) regarding(object runtime.Object) runtime.Object {
	if object == nil {
		return nil
	}
	if _, _, err := r.types.ObjectKinds(object); err == nil {
		return object
	}
	if ref, err := reference.GetReference(clientgoscheme.Scheme, object); err == nil {
		return ref
	}
	return object
}

func (r *recorder) dropped(object runtime.Object, eventtype, reason string) bool {
	if r.ctx.Err() == nil {
		return false
	}
	if logger := r.logger.V(4); logger.Enabled() {
		kv := []any{"type", eventtype, "reason", reason, "objectType", fmt.Sprintf("%T", object)}
		if m, ok := object.(klog.KMetadata); ok {
			kv = append(kv, "object", klog.KObj(m))
		}
		logger.Info("Event dropped: the recorder's context has ended", kv...)
	}
	return true
}

// newEventsAPIRecorder is NewRecorder through events.k8s.io/v1.
func newEventsAPIRecorder(ctx context.Context, client kubernetes.Interface, component string, scheme *runtime.Scheme, verbosity klog.Level) (record.EventRecorderLogger, error) {
	logger := klog.FromContext(ctx)
	broadcaster := toolsevents.NewBroadcaster(retryingEventsSink{&toolsevents.EventSinkImpl{Interface: client.EventsV1()}})
	stopLogging, err := broadcaster.StartLogging(logger.V(int(verbosity)))
	if err != nil {
		broadcaster.Shutdown()
		return nil, fmt.Errorf("events: logging events: %w", err)
	}
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		stopLogging()
		broadcaster.Shutdown()
		return nil, fmt.Errorf("events: recording to the events.k8s.io API: %w", err)
	}
	context.AfterFunc(ctx, broadcaster.Shutdown)
	inner := eventsAPIRecorder{broadcaster.NewRecorder(scheme, component).WithLogger(logger)}
	return &recorder{ctx: ctx, logger: logger, types: scheme, inner: inner}, nil
}

// eventsAPIRecorder gives a tools/events recorder the interface of
// record.EventRecorderLogger.
type eventsAPIRecorder struct {
	rec toolsevents.EventRecorderLogger
}

func (r eventsAPIRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.rec.Eventf(object, nil, eventtype, reason, reason, "%s", message)
}

func (r eventsAPIRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.rec.Eventf(object, nil, eventtype, reason, reason, messageFmt, args...)
}

func (r eventsAPIRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if a, ok := r.rec.(toolsevents.AnnotatedEventRecorder); ok {
		a.AnnotatedEventf(object, nil, annotations, eventtype, reason, reason, messageFmt, args...)
		return
	}
	r.rec.Eventf(object, nil, eventtype, reason, reason, messageFmt, args...)
}

func (r eventsAPIRecorder) WithLogger(logger klog.Logger) record.EventRecorderLogger {
	return eventsAPIRecorder{r.rec.WithLogger(logger)}
}

// retryingSink is the API sink of the core events, whose errors that may
// pass are retried: client-go's recorder drops an event the API server
// answered with an error status at once ("will not retry"), and tries
// again (at most 12 times, about 10 s apart, then drops it) only when the
// server could not be reached. An API server that restarts denies
// requests until its authorization caches are filled, and one that is
// overloaded answers 429 or 503: such an event is retried as an
// unreachable server's is, rather than lost.
type retryingSink struct{ record.EventSink }

func (s retryingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	got, err := s.EventSink.Create(e)
	return got, mayPass(err)
}

func (s retryingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	got, err := s.EventSink.Update(e)
	return got, mayPass(err)
}

func (s retryingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	got, err := s.EventSink.Patch(e, data)
	return got, mayPass(err)
}

// retryingEventsSink is retryingSink for the events.k8s.io API, whose
// recorder (client-go's tools/events) drops and retries as the core one
// does.
type retryingEventsSink struct{ toolsevents.EventSink }

func (s retryingEventsSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	got, err := s.EventSink.Create(ctx, e)
	return got, mayPass(err)
}

func (s retryingEventsSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	got, err := s.EventSink.Update(ctx, e)
	return got, mayPass(err)
}

func (s retryingEventsSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	got, err := s.EventSink.Patch(ctx, e, data)
	return got, mayPass(err)
}

// mayPass wraps an error status that may pass (denied, throttled,
// unavailable, timed out, internal), so that the recorder, which tells
// an error status by its type, retries it; other errors, NotFound and
// AlreadyExists among them (the recorder acts on those), and a denial
// because the namespace is terminating, are returned as they are.
func mayPass(err error) error {
	switch {
	case err == nil, apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return err
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err):
		return fmt.Errorf("events: the API server refused the event, for now perhaps: %w", err)
	}
	return err
}
