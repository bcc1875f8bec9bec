package informer

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// EnqueueHandler returns a handler (see NewHandler) that passes the key of
// every added, updated and deleted object of type T to enqueue:
//
//	fooInformer.Informer().AddEventHandler(informer.EnqueueHandler[*v1alpha1.Foo](ctrl.Add))
//
// The key is the object's namespace and name. A tombstone is enqueued under
// the key of the object inside it, after the predicates have judged that
// object. enqueue is called synchronously for each event that passes;
// it should be a plain, non-rate-limited add such as a workqueue's Add, so
// that informer events are never delayed by a key's retry backoff.
func EnqueueHandler[T metav1.Object](enqueue func(cache.ObjectName), opts ...Option) cache.ResourceEventHandler {
	return NewHandler(Funcs[T]{
		AddFunc:    func(obj T, _ bool) { enqueue(cache.MetaObjectToName(obj)) },
		UpdateFunc: func(_, newObj T) { enqueue(cache.MetaObjectToName(newObj)) },
		DeleteFunc: func(obj T, _ bool) { enqueue(cache.MetaObjectToName(obj)) },
	}, opts...)
}

// PriorityEnqueueHandler is EnqueueHandler with a second enqueue function,
// enqueueLow, for events that carry no change: adds that belong to the
// informer's initial list (isInInitialList) and updates whose old and new
// objects have the same, non-empty resourceVersion (resyncs). Every other
// event goes to enqueue. With a queue that serves enqueueLow after
// enqueue, a controller that starts with many objects, or resyncs them,
// still handles fresh changes first.
//
// Predicates given in opts judge every event before it is routed. With
// SkipUnchangedResync, resyncs are dropped instead of going to enqueueLow.
func PriorityEnqueueHandler[T metav1.Object](enqueue, enqueueLow func(cache.ObjectName), opts ...Option) cache.ResourceEventHandler {
	return NewHandler(Funcs[T]{
		AddFunc: func(obj T, isInInitialList bool) {
			if isInInitialList {
				enqueueLow(cache.MetaObjectToName(obj))
				return
			}
			enqueue(cache.MetaObjectToName(obj))
		},
		UpdateFunc: func(oldObj, newObj T) {
			if !resourceVersionChanged(oldObj, newObj) {
				enqueueLow(cache.MetaObjectToName(newObj))
				return
			}
			enqueue(cache.MetaObjectToName(newObj))
		},
		DeleteFunc: func(obj T, _ bool) { enqueue(cache.MetaObjectToName(obj)) },
	}, opts...)
}

// EnqueueMappedHandler returns a handler (see NewHandler) that maps every
// object of type T to zero or more keys with keys and passes each key to
// enqueue. It is the building block for handlers that enqueue something
// other than the object itself, such as its owner.
//
// On add and delete the keys of the object are enqueued. On update the keys
// of the new object are enqueued, followed by those keys of the old object
// that the new one does not have: when a mapping changes (for example the
// object moved to another owner) both sides are told, and a key both sides
// share is enqueued once. keys and enqueue are called synchronously on the
// informer's notification goroutine; enqueue should not be rate limited.
func EnqueueMappedHandler[T metav1.Object, K comparable](keys func(obj T) []K, enqueue func(K), opts ...Option) cache.ResourceEventHandler {
	each := func(obj T) {
		for _, k := range keys(obj) {
			enqueue(k)
		}
	}
	return NewHandler(Funcs[T]{
		AddFunc: func(obj T, _ bool) { each(obj) },
		UpdateFunc: func(oldObj, newObj T) {
			newKeys := keys(newObj)
			for _, k := range newKeys {
				enqueue(k)
			}
			for _, k := range keys(oldObj) {
				if !slices.Contains(newKeys, k) {
					enqueue(k)
				}
			}
		},
		DeleteFunc: func(obj T, _ bool) { each(obj) },
	}, opts...)
}
