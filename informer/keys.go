package informer

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// AllKeys returns a function that lists the keys of the objects in inf's
// cache that every predicate keeps (by its Add), for the list of a
// queue.Periodic source: a periodic check of every object, or of those in
// a state the clock can change. It reads the cache only: no request.
//
//	err := ctrl.Watch(queue.Periodic(ctrl, time.Minute, informer.AllKeys(configMaps.TypedInformer()), queue.LowPriority()))
func AllKeys[T Object](inf cache.TypedSharedIndexInformer[T], preds ...Predicate) func(context.Context) ([]cache.ObjectName, error) {
	return func(context.Context) ([]cache.ObjectName, error) {
		objs := inf.GetStore().List()
		keys := make([]cache.ObjectName, 0, len(objs))
	next:
		for _, o := range objs {
			obj, ok := o.(T)
			if !ok {
				continue // not of the informer's type: never stored by client-go
			}
			for _, p := range preds {
				if !p.Add(obj) {
					continue next
				}
			}
			keys = append(keys, cache.MetaObjectToName(obj))
		}
		return keys, nil
	}
}

// NamesIn returns a function that maps object names to the keys of the
// objects of those names in namespace (empty for cluster-scoped objects),
// for a queue.Channel source of names, such as an external system's change
// notifications.
//
//	err := ctrl.Watch(queue.Channel(ctrl, changes, informer.NamesIn(""))) // changes: a <-chan []string of names
func NamesIn(namespace string) func(names []string) []cache.ObjectName {
	return func(names []string) []cache.ObjectName {
		keys := make([]cache.ObjectName, len(names))
		for i, n := range names {
			keys[i] = cache.ObjectName{Namespace: namespace, Name: n}
		}
		return keys
	}
}
