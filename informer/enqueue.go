package informer

import (
	"slices"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Queue is where the handlers of this package put keys: Add for events that
// carry a change, AddLowPriority for events that carry none (an informer's
// initial list, resyncs). A queue that serves low-priority keys after the
// others lets a controller that starts with many objects, or resyncs them,
// handle fresh changes first. *queue.Controller is a Queue; QueueFunc turns
// a plain add function (a client-go workqueue's Add) into one.
//
// Both methods are called synchronously on the informer's notification
// goroutine; they should be cheap, must not block, and should not be rate
// limited, so that events are never delayed by a key's retry backoff.
//
// A Queue that is also a tracing.Recorder of K and traces (a
// *queue.Controller given queue.WithTracing) is told the trigger of every
// key before it is added: the event, the source (see WithSource), the
// object's namespace/name and resourceVersion, and the trace context of
// the write that caused the event when the object's tracing.Annotation is
// new in it (an add, or an update that changed the annotation). Events of
// an informer's initial list are tracing.EventInitialList, without a link
// to the write the annotation names (the start set them off); a relist after
// a watch could not resume shows as adds of the objects that are new and
// updates of those that changed.
type Queue[K comparable] interface {
	Add(key K)
	AddLowPriority(key K)
}

// QueueFunc is a Queue that passes every key to the same function,
// whatever its priority.
type QueueFunc[K comparable] func(key K)

// Add calls f(key).
func (f QueueFunc[K]) Add(key K) { f(key) }

// AddLowPriority calls f(key).
func (f QueueFunc[K]) AddLowPriority(key K) { f(key) }

// EnqueueHandler returns a handler for an informer of T that passes the key
// (namespace and name) of every added, updated and deleted object to q:
//
//	err := ctrl.Watch(queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl)))
//
// Adds of the informer's initial list and resyncs (updates with an
// unchanged resourceVersion) go to q.AddLowPriority, everything else to
// q.Add. A delete is enqueued under the key client-go gives it, also when
// its final state is unknown (see NewHandler for how predicates judge it).
func EnqueueHandler[T Object](q Queue[cache.ObjectName], opts ...Option) cache.TypedResourceEventHandler[T] {
	return NewHandler(&enqueuer[T, cache.ObjectName]{q: q, keys: func(obj T) []cache.ObjectName {
		return []cache.ObjectName{cache.MetaObjectToName(obj)}
	}, deleted: func(obj cache.DeletedObject[T]) []cache.ObjectName {
		return []cache.ObjectName{obj.GetObjectName()}
	}, source: sourceOf(opts, tracing.SourceObject)}, opts...)
}

// sourceOf is the source of WithSource in opts, else def.
func sourceOf(opts []Option, def tracing.Source) tracing.Source {
	if o := newOptions(opts); o.source != "" {
		return o.source
	}
	return def
}

// EnqueueMappedHandler returns a handler for an informer of T that maps
// every object to zero or more keys with keys and passes each key to q. It
// is the building block for handlers that enqueue something other than the
// object itself, such as its owner.
//
// On add and delete the keys of the object are enqueued. On update the keys
// of the new object are enqueued, followed by those keys of the old object
// that the new one does not have: when a mapping changes (for example the
// object moved to another owner) both sides are told, and a key both sides
// share is enqueued once. Adds of the informer's initial list and resyncs
// go to q.AddLowPriority, everything else to q.Add. A delete is mapped from
// the last state the informer knew; a delete without any known state has
// nothing to map and enqueues nothing. keys is called synchronously on the
// informer's notification goroutine.
func EnqueueMappedHandler[T Object, K comparable](keys func(obj T) []K, q Queue[K], opts ...Option) cache.TypedResourceEventHandler[T] {
	return NewHandler(&enqueuer[T, K]{q: q, keys: keys, source: sourceOf(opts, tracing.SourceMapped)}, opts...)
}

// enqueuer is the handler of EnqueueHandler and EnqueueMappedHandler.
type enqueuer[T Object, K comparable] struct {
	q    Queue[K]
	keys func(obj T) []K
	// deleted, when set, maps a delete (also one without an object).
	deleted func(obj cache.DeletedObject[T]) []K
	// source names the handler in the triggers of traced queues.
	source tracing.Source
}

// trigger tells a traced queue the trigger of keys, before they are added.
func (e *enqueuer[T, K]) trigger(t func() tracing.Trigger, keys ...[]K) {
	r := tracing.RecorderOf[K](e.q)
	if r == nil {
		return
	}
	tr := t()
	for _, ks := range keys {
		for _, k := range ks {
			r.Trigger(k, tr)
		}
	}
}

// send returns the queue method for an event: low priority for events that
// carry no change.
func (e *enqueuer[T, K]) send(low bool) func(K) {
	if low {
		return e.q.AddLowPriority
	}
	return e.q.Add
}

// OnAdd implements cache.TypedResourceEventHandler.
func (e *enqueuer[T, K]) OnAdd(obj T, isInInitialList bool) {
	add := e.send(isInInitialList)
	keys := e.keys(obj)
	e.trigger(func() tracing.Trigger {
		event := tracing.EventAdd
		if isInInitialList {
			event = tracing.EventInitialList
		}
		// An object of the initial list was not brought by the event: its
		// annotation names an old write, not what set this reconcile off.
		return tracing.ObjectTrigger(event, e.source, obj, !isInInitialList)
	}, keys)
	for _, k := range keys {
		add(k)
	}
}

// OnUpdate implements cache.TypedResourceEventHandler.
func (e *enqueuer[T, K]) OnUpdate(oldObj, newObj T) {
	changed := resourceVersionChanged(oldObj, newObj)
	add := e.send(!changed)
	newKeys := e.keys(newObj)
	var oldKeys []K
	for _, k := range e.keys(oldObj) {
		if !slices.Contains(newKeys, k) {
			oldKeys = append(oldKeys, k)
		}
	}
	e.trigger(func() tracing.Trigger {
		event := tracing.EventUpdate
		if !changed {
			event = tracing.EventResync
		}
		written := changed && oldObj.GetAnnotations()[tracing.Annotation] != newObj.GetAnnotations()[tracing.Annotation]
		return tracing.ObjectTrigger(event, e.source, newObj, written)
	}, newKeys, oldKeys)
	for _, k := range newKeys {
		add(k)
	}
	for _, k := range oldKeys {
		add(k)
	}
}

// OnDelete implements cache.TypedResourceEventHandler.
func (e *enqueuer[T, K]) OnDelete(obj cache.DeletedObject[T]) {
	var keys []K
	var zero T
	switch {
	case e.deleted != nil:
		keys = e.deleted(obj)
	case obj.OptionalObj != zero:
		keys = e.keys(obj.OptionalObj)
	}
	e.trigger(func() tracing.Trigger {
		if obj.OptionalObj != zero {
			return tracing.ObjectTrigger(tracing.EventDelete, e.source, obj.OptionalObj, false)
		}
		return tracing.Trigger{Event: tracing.EventDelete, Source: e.source, Object: obj.GetObjectName().String()}
	}, keys)
	for _, k := range keys {
		e.q.Add(k)
	}
}

// EnqueueByIndex returns a handler for an informer of S that enqueues the
// keys of the objects of idx filed under values(obj): the objects that refer
// to obj. For example, with Foos indexed by the name of the Deployment they
// want, a Deployment handler whose values function returns the Deployment's
// own namespace/name enqueues every Foo that wants it, when it appears,
// changes or goes:
//
//	err := ctrl.Watch(queue.On(deployments.TypedInformer(),
//		informer.EnqueueByIndex(byWanted, informer.KeyOf[*appsv1.Deployment], ctrl)))
//
// Each referrer is enqueued once per event, however many of the object's
// values it is filed under. On update, the referrers of both the old and
// the new object are enqueued (each once), so a change of the value a
// referrer matches tells both sides. Events are routed to q's two
// priorities as by EnqueueMappedHandler. A lookup that fails is reported
// through utilruntime.HandleErrorWithContext with the context of
// WithContext.
func EnqueueByIndex[S, T Object](idx *Index[T], values func(obj S) []string, q Queue[cache.ObjectName], opts ...Option) cache.TypedResourceEventHandler[S] {
	o := newOptions(opts)
	referrers := func(obj S) []cache.ObjectName {
		var out []cache.ObjectName
		seen := map[cache.ObjectName]bool{}
		for _, v := range values(obj) {
			keys, err := idx.Keys(v)
			if err != nil {
				utilruntime.HandleErrorWithContext(o.ctx, err, "Looking up referrers failed", "index", idx.Name(), "value", v)
				continue
			}
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
		return out
	}
	return EnqueueMappedHandler(referrers, q, append([]Option{WithSource(tracing.SourceIndex)}, opts...)...)
}
