package informer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Object is what the handlers, predicates and indexes of this package work
// on: a comparable API object type with object metadata, such as
// *appsv1.Deployment. Every type of client-go's typed informers is one.
type Object interface {
	comparable
	metav1.Object
}

// NewHandler returns h behind the predicates given with WithPredicates: an
// event reaches h only if every predicate passes it. h is any client-go typed
// handler, such as a cache.TypedResourceEventHandlerDetailedFuncs[T]; the
// result is registered on an informer of the same type T (Controller.Watch of
// package queue with queue.On, or the informer's AddTypedEventHandler), so a
// handler for one type cannot be registered on an informer of another.
//
// Tombstones are client-go's: a delete arrives as a cache.DeletedObject[T].
// Predicates judge its OptionalObj, the last state the informer knew (which
// may be stale); a delete whose final state is unknown and whose OptionalObj
// is missing cannot be judged and reaches h unfiltered, since a lost delete
// is worse than a needless one.
//
// Panics in h or in predicates are not recovered.
func NewHandler[T Object](h cache.TypedResourceEventHandler[T], opts ...Option) cache.TypedResourceEventHandler[T] {
	o := newOptions(opts)
	if len(o.predicates) == 0 {
		return h
	}
	return &filtered[T]{next: h, predicates: o.predicates}
}

// filtered is a handler behind predicates.
type filtered[T Object] struct {
	next       cache.TypedResourceEventHandler[T]
	predicates []Predicate
}

// OnAdd implements cache.TypedResourceEventHandler.
func (h *filtered[T]) OnAdd(obj T, isInInitialList bool) {
	for _, p := range h.predicates {
		if !p.Add(obj) {
			return
		}
	}
	h.next.OnAdd(obj, isInInitialList)
}

// OnUpdate implements cache.TypedResourceEventHandler.
func (h *filtered[T]) OnUpdate(oldObj, newObj T) {
	for _, p := range h.predicates {
		if !p.Update(oldObj, newObj) {
			return
		}
	}
	h.next.OnUpdate(oldObj, newObj)
}

// OnDelete implements cache.TypedResourceEventHandler.
func (h *filtered[T]) OnDelete(obj cache.DeletedObject[T]) {
	var zero T
	if obj.OptionalObj != zero {
		for _, p := range h.predicates {
			if !p.Delete(obj.OptionalObj) {
				return
			}
		}
	}
	h.next.OnDelete(obj)
}

// Option configures the handlers of this package. A nil Option is ignored.
type Option func(*options)

type options struct {
	ctx        context.Context
	predicates []Predicate
	source     tracing.Source
}

func newOptions(opts []Option) options {
	o := options{ctx: context.Background()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithPredicates adds predicates that every event must pass before the
// handler acts on it, except a delete without object, which cannot be
// judged and always passes (see NewHandler). WithPredicates may be given
// more than once; the predicates accumulate. Nil predicates are ignored.
func WithPredicates(ps ...Predicate) Option {
	return func(o *options) {
		for _, p := range ps {
			if !isNilPredicate(p) {
				o.predicates = append(o.predicates, p)
			}
		}
	}
}

// WithContext gives the context whose logger receives a handler's reports
// (an index lookup that failed in EnqueueByIndex, for example) through
// utilruntime.HandleErrorWithContext. Default context.Background().
func WithContext(ctx context.Context) Option {
	return func(o *options) {
		if ctx != nil {
			o.ctx = ctx
		}
	}
}

// WithSource names what maps the events of an enqueue handler of this
// package to keys, in the triggers it records for traced queues (see
// Queue): owner.EnqueueOwner gives tracing.SourceOwner. Default:
// tracing.SourceObject for EnqueueHandler, tracing.SourceIndex for
// EnqueueByIndex, tracing.SourceMapped for EnqueueMappedHandler. Other
// handlers ignore it.
func WithSource(source tracing.Source) Option {
	return func(o *options) { o.source = source }
}
