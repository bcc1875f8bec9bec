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
// object, and starts its workers only once the handler has seen every
// object that existed when the informer started:
//
//	synced, _, err := informer.Register(ctx, fooInformer.Informer(),
//		informer.EnqueueHandler[*v1alpha1.Foo](ctrl.Add,
//			informer.SkipUnchangedResync(),
//			informer.WithPredicates(informer.GenerationChanged()),
//		))
//	if err != nil {
//		return err
//	}
//	if err := ctrl.WaitForSync(synced); err != nil { // the worker loop waits for it
//		return err
//	}
//
// Keys are cache.ObjectName values (namespace and name). Enqueue functions
// are called synchronously from the informer's notification goroutine for
// the handler; they should be cheap and must not block. A workqueue's Add
// (or the worker loop's) is both.
package informer
