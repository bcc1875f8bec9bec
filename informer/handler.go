package informer

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Funcs holds the callbacks of a typed handler. A nil callback ignores its
// event. Callbacks run on the informer's notification goroutine for the
// handler, one event at a time, and must not modify the objects they are
// given: those objects are shared with the informer's cache.
type Funcs[T metav1.Object] struct {
	// AddFunc is called for an object that appeared in the informer.
	// isInInitialList is true when the add belongs to the informer's
	// initial list (the objects that existed when it started), false for
	// objects created later or that came back after a relist.
	AddFunc func(obj T, isInInitialList bool)

	// UpdateFunc is called when an object changed, and also on every
	// resync with oldObj and newObj carrying the same resourceVersion
	// (the ResourceVersionChanged predicate drops those). oldObj is the last state the informer
	// knew; several changes may have been merged into one update.
	UpdateFunc func(oldObj, newObj T)

	// DeleteFunc is called for a deleted object. When the informer missed
	// the delete itself and only noticed it on a relist, it delivers a
	// cache.DeletedFinalStateUnknown tombstone; the handler unwraps it and
	// passes the last known state of the object with finalStateUnknown
	// set to true. That state may be stale.
	DeleteFunc func(obj T, finalStateUnknown bool)
}

// NewHandler returns a cache.ResourceEventHandler, ready for
// SharedInformer.AddEventHandler, that calls funcs with objects of type T
// (for example *appsv1.Deployment).
//
// For every event the handler, in this order:
//
//  1. on delete, unwraps a cache.DeletedFinalStateUnknown (value or pointer)
//     to the object inside it;
//  2. checks that each object is a non-nil T; anything else is reported as
//     an *UnexpectedTypeError to the error handler (see WithErrorHandler;
//     by default utilruntime.HandleErrorWithContext) and the event is
//     dropped;
//  3. runs the predicates given with WithPredicates, all of which must
//     pass;
//  4. calls the matching callback of funcs.
//
// Filters therefore never see a tombstone, and a delete is filtered on the
// real object. A tombstone without an object (the informer knew only the
// key; its Obj is nil, or a nil pointer of any type) cannot be filtered or
// typed and is reported like an unexpected type, with its Key in the
// report; handlers that need only the key (EnqueueHandler) enqueue it
// instead.
//
// The returned handler never panics on the objects it receives; panics in
// funcs or in user-supplied predicates are not recovered.
func NewHandler[T metav1.Object](funcs Funcs[T], opts ...Option) cache.ResourceEventHandler {
	return &handler[T]{
		funcs:    funcs,
		options:  newOptions(opts),
		expected: reflect.TypeFor[T]().String(),
	}
}

type handler[T metav1.Object] struct {
	funcs    Funcs[T]
	options  options
	expected string
	// deleteKey, when set, takes the key of a tombstone without an object
	// and reports whether it could use it.
	deleteKey func(key string) bool
}

// Event names used in reports.
const (
	eventAdd    = "add"
	eventUpdate = "update"
	eventDelete = "delete"
)

// OnAdd implements cache.ResourceEventHandler.
func (h *handler[T]) OnAdd(obj any, isInInitialList bool) {
	t, ok := h.cast(eventAdd, obj, nil)
	if !ok {
		return
	}
	for _, p := range h.options.predicates {
		if !p.Add(t) {
			return
		}
	}
	if h.funcs.AddFunc != nil {
		h.funcs.AddFunc(t, isInInitialList)
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (h *handler[T]) OnUpdate(oldObj, newObj any) {
	o, ok := h.cast(eventUpdate, oldObj, nil)
	if !ok {
		return
	}
	n, ok := h.cast(eventUpdate, newObj, nil)
	if !ok {
		return
	}
	for _, p := range h.options.predicates {
		if !p.Update(o, n) {
			return
		}
	}
	if h.funcs.UpdateFunc != nil {
		h.funcs.UpdateFunc(o, n)
	}
}

// OnDelete implements cache.ResourceEventHandler.
func (h *handler[T]) OnDelete(obj any) {
	var tombstone *cache.DeletedFinalStateUnknown
	switch d := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		tombstone = &d
		obj = d.Obj
	case *cache.DeletedFinalStateUnknown:
		if d == nil {
			// Report the nil pointer itself.
			break
		}
		tombstone = d
		obj = d.Obj
	}
	// A typed nil (a nil *T in the interface) carries no object either.
	if tombstone != nil && isNil(tombstone.Obj) && h.deleteKey != nil && h.deleteKey(tombstone.Key) {
		return
	}
	t, ok := h.cast(eventDelete, obj, tombstone)
	if !ok {
		return
	}
	for _, p := range h.options.predicates {
		if !p.Delete(t) {
			return
		}
	}
	if h.funcs.DeleteFunc != nil {
		h.funcs.DeleteFunc(t, tombstone != nil)
	}
}

// cast converts obj to a non-nil T or reports why it cannot.
func (h *handler[T]) cast(event string, obj any, tombstone *cache.DeletedFinalStateUnknown) (T, bool) {
	t, ok := obj.(T)
	if ok && !isNil(t) {
		return t, true
	}
	err := &UnexpectedTypeError{
		Event:     event,
		Expected:  h.expected,
		Actual:    describe(obj),
		Tombstone: tombstone != nil,
	}
	kv := []any{"event", event, "expectedType", err.Expected, "actualType", err.Actual}
	if tombstone != nil {
		err.Key = tombstone.Key
		kv = append(kv, "tombstoneKey", tombstone.Key)
	}
	h.options.report(h.options.ctx, err, "Event handler received an object of an unexpected type", kv...)
	var zero T
	return zero, false
}

// isNil reports whether v is a nil interface or holds a nil pointer, map,
// slice, channel or function, on which calling metav1.Object methods could
// panic.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// describe names the type of obj for reports.
func describe(obj any) string {
	if obj == nil {
		return "<nil>"
	}
	if isNil(obj) {
		return fmt.Sprintf("nil %T", obj)
	}
	return fmt.Sprintf("%T", obj)
}

// UnexpectedTypeError describes an event whose object was not a non-nil
// value of the handler's type. Handlers built by this package pass it to
// their error handler; match it with errors.As.
type UnexpectedTypeError struct {
	// Event is "add", "update" or "delete".
	Event string
	// Expected is the handler's type, for example "*v1.Deployment".
	Expected string
	// Actual is the type that arrived ("<nil>" for a nil interface,
	// "nil *v1.Deployment" for a nil pointer). For a tombstone it is the
	// type of the object inside the tombstone.
	Actual string
	// Tombstone is true when the object arrived wrapped in a
	// cache.DeletedFinalStateUnknown.
	Tombstone bool
	// Key is the tombstone's key when Tombstone is true.
	Key string
}

// Error implements error.
func (e *UnexpectedTypeError) Error() string {
	if e.Tombstone {
		return fmt.Sprintf("informer: %s event: expected %s, got %s in a DeletedFinalStateUnknown with key %q",
			e.Event, e.Expected, e.Actual, e.Key)
	}
	return fmt.Sprintf("informer: %s event: expected %s, got %s", e.Event, e.Expected, e.Actual)
}

// Option configures a handler built by this package (NewHandler and the
// Enqueue handlers). A nil Option is ignored.
type Option func(*options)

type options struct {
	ctx        context.Context
	report     utilruntime.ErrorHandler
	predicates []Predicate
}

func newOptions(opts []Option) options {
	o := options{
		ctx:    context.Background(),
		report: utilruntime.HandleErrorWithContext,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithPredicates adds filters to a handler. An event reaches the callbacks
// only if every predicate passes it (see Predicate for how each event is
// judged). Predicates always see the unwrapped object of the handler's
// type, never a tombstone. WithPredicates may be given more than once; the
// predicates accumulate in order and evaluation stops at the first one that
// rejects the event. nil predicates are ignored.
func WithPredicates(ps ...Predicate) Option {
	return func(o *options) {
		for _, p := range ps {
			if !isNilPredicate(p) {
				o.predicates = append(o.predicates, p)
			}
		}
	}
}

// WithContext sets the context passed to the error handler; its logger
// (klog.FromContext) is the one utilruntime.HandleErrorWithContext logs
// with. The default is context.Background().
func WithContext(ctx context.Context) Option {
	return func(o *options) {
		if ctx != nil {
			o.ctx = ctx
		}
	}
}

// WithErrorHandler replaces utilruntime.HandleErrorWithContext as the
// receiver of reports about objects of an unexpected type. fn is called
// with the context from WithContext, an *UnexpectedTypeError, a message and
// key/value pairs, synchronously on the informer's notification goroutine.
// A nil fn restores the default.
func WithErrorHandler(fn utilruntime.ErrorHandler) Option {
	return func(o *options) {
		if fn == nil {
			fn = utilruntime.HandleErrorWithContext
		}
		o.report = fn
	}
}
