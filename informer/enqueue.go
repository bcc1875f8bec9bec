package informer

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
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

// EnqueueHandler returns a handler (see NewHandler) that passes the key
// (namespace and name) of every added, updated and deleted object of type T
// to q:
//
//	err := ctrl.Watch(fooInformer.Informer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl))
//
// Adds of the informer's initial list and resyncs (updates with an
// unchanged resourceVersion) go to q.AddLowPriority, everything else to
// q.Add. A tombstone is enqueued under the key of the object inside it,
// after the predicates have judged that object. A tombstone without an
// object (the informer knew only its key; Obj is nil or a nil pointer)
// cannot be judged: its key is enqueued anyway, since a needless reconcile
// is harmless and a lost delete is not.
func EnqueueHandler[T metav1.Object](q Queue[cache.ObjectName], opts ...Option) cache.ResourceEventHandler {
	h := EnqueueMappedHandler(func(obj T) []cache.ObjectName {
		return []cache.ObjectName{cache.MetaObjectToName(obj)}
	}, q, opts...).(*handler[T])
	h.deleteKey = func(key string) bool {
		name, err := cache.ParseObjectName(key)
		if err != nil {
			return false
		}
		q.Add(name)
		return true
	}
	return h
}

// EnqueueMappedHandler returns a handler (see NewHandler) that maps every
// object of type T to zero or more keys with keys and passes each key to
// q. It is the building block for handlers that enqueue something other
// than the object itself, such as its owner.
//
// On add and delete the keys of the object are enqueued. On update the keys
// of the new object are enqueued, followed by those keys of the old object
// that the new one does not have: when a mapping changes (for example the
// object moved to another owner) both sides are told, and a key both sides
// share is enqueued once. Adds of the informer's initial list and resyncs
// go to q.AddLowPriority, everything else to q.Add. keys is called
// synchronously on the informer's notification goroutine.
func EnqueueMappedHandler[T metav1.Object, K comparable](keys func(obj T) []K, q Queue[K], opts ...Option) cache.ResourceEventHandler {
	send := func(low bool) func(K) {
		if low {
			return q.AddLowPriority
		}
		return q.Add
	}
	return NewHandler(Funcs[T]{
		AddFunc: func(obj T, isInInitialList bool) {
			add := send(isInInitialList)
			for _, k := range keys(obj) {
				add(k)
			}
		},
		UpdateFunc: func(oldObj, newObj T) {
			add := send(!resourceVersionChanged(oldObj, newObj))
			newKeys := keys(newObj)
			for _, k := range newKeys {
				add(k)
			}
			for _, k := range keys(oldObj) {
				if !slices.Contains(newKeys, k) {
					add(k)
				}
			}
		},
		DeleteFunc: func(obj T, _ bool) {
			for _, k := range keys(obj) {
				q.Add(k)
			}
		},
	}, opts...)
}

// EnqueueByIndex returns a handler (see NewHandler) for objects of type S
// that enqueues the keys of the objects of idx filed under values(obj): the
// objects that refer to obj. For example, with Foos indexed by the name of
// the Deployment they want, a Deployment handler whose values function
// returns the Deployment's own namespace/name enqueues every Foo that wants
// it, when it appears, changes or goes.
//
// Each referrer is enqueued once per event, however many of the object's
// values it is filed under. On update, the referrers of both the old and
// the new object are enqueued (each once), so a change of the value a
// referrer matches tells both sides.
// A tombstone is unwrapped first; its last known state is looked up. Events
// are routed to q's two priorities as by EnqueueMappedHandler.
func EnqueueByIndex[S, T metav1.Object](idx *Index[T], values func(obj S) []string, q Queue[cache.ObjectName], opts ...Option) cache.ResourceEventHandler {
	o := newOptions(opts)
	referrers := func(obj S) []cache.ObjectName {
		var out []cache.ObjectName
		seen := map[cache.ObjectName]bool{}
		for _, v := range values(obj) {
			keys, err := idx.Keys(v)
			if err != nil {
				o.report(o.ctx, err, "Looking up referrers failed", "index", idx.Name(), "value", v)
				continue
			}
			// A referrer filed under several of the values is one referrer.
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
		return out
	}
	return EnqueueMappedHandler(referrers, q, opts...)
}
