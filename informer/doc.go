// Package informer provides typed, tombstone-safe event handlers for
// client-go shared informers, composable event filters, sync gating on a
// handler's registration, and a transform that drops managedFields from
// cached objects.
//
// A handler built here accepts the untyped objects an informer delivers,
// unwraps cache.DeletedFinalStateUnknown tombstones on delete before
// anything else looks at the object, checks that the object has the
// expected type, and only then runs filters and callbacks on the concrete
// type. An object of any other type (a nil, a typed nil pointer, a
// tombstone around the wrong type) is reported through
// utilruntime.HandleErrorWithContext and dropped; the handler never panics
// on it.
//
// The common case is a controller that enqueues the key of every changed
// object. The queue (a *queue.Controller, or any Queue) gets initial-list
// adds and resyncs at low priority and everything else at normal priority;
// the controller registers the handler itself and starts its workers once
// the handler has seen the informer's initial list:
//
//	err := ctrl.Watch(fooInformer.Informer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl,
//		informer.WithPredicates(informer.GenerationChanged())))
//
// Objects that refer to others are found through typed indexes: NewIndex
// files the objects of an informer under values of their own, and
// EnqueueByIndex maps an object of another kind to the keys of the objects
// filed under its values.
//
// Keys are cache.ObjectName values (namespace and name). Queue methods are
// called synchronously from the informer's notification goroutine for the
// handler; they should be cheap and must not block. A workqueue's Add (or
// the worker loop's) is both.
package informer
