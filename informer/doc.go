// Package informer provides typed event handlers for client-go's typed
// informers, composable event filters that judge old and new objects, typed
// indexes, and transforms that keep informer caches small: one that drops
// managedFields (StripManagedFields) and one that keeps only the fields a
// controller reads (Trim).
//
// Every handler here is a cache.TypedResourceEventHandler[T] for one object
// type T, so it can only be registered on an informer of that type: with
// queue.On for a controller, or with the informer's AddTypedEventHandler.
// Typed informers come from the generated factories' TypedInformer methods.
// Tombstones are client-go's cache.DeletedObject[T], which always carries
// the deleted object's key.
//
// The common case is a controller that enqueues the key of every changed
// object. The queue (a *queue.Controller, or any Queue) gets initial-list
// adds and resyncs at low priority and everything else at normal priority;
// the controller registers the handler itself and starts its workers once
// the handler has seen the informer's initial list:
//
//	err := ctrl.Watch(queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl,
//		informer.WithPredicates(informer.GenerationChanged()))))
//
// Objects that refer to others are found through typed indexes: NewIndex
// files the objects of an informer under values of their own, and
// EnqueueByIndex maps an object of another kind to the keys of the objects
// filed under its values. When objects depend on something shared instead
// (a ConfigMap of settings, a Namespace), EnqueueTargets fans a change out
// to every object of another informer, or to those a function matches;
// LabelPresent and LabelChanged keep such fan-outs to the changes that
// matter.
//
// Keys are cache.ObjectName values (namespace and name). Queue methods are
// called synchronously from the informer's notification goroutine for the
// handler; they should be cheap and must not block. A workqueue's Add (or
// the worker loop's) is both.
//
// A cache holds every object of its kind as decoded, which makes it most of
// a controller's memory. Trim declares, per informer, the fields the
// controller reads, by their JSON paths, and the cache keeps only those and
// each object's identity; a trimmed object is marked so that it is never
// written back whole (package reconcile/write patches what a controller
// changes in one), and a path that would keep only some fields of the
// items of a list a strategic merge patch replaces whole is refused:
//
//	err := informer.Trim[*appsv1.Deployment](factory.Apps().V1().Deployments().Informer(),
//		"spec.replicas", "spec.template.spec.containers.image", "status.availableReplicas")
//
// Trimmed objects share the kept values they have in common. An index
// whose values each belong to few objects takes about a sixth of the
// memory in buckets (WithBuckets).
package informer
