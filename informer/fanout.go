package informer

import (
	"k8s.io/client-go/tools/cache"
)

// EnqueueTargets returns a handler for an informer of S that, whenever an
// object of S is added, changed or deleted, enqueues the key of every object
// in the cache of targets (an informer of another kind T) that match
// accepts: a fan-out, for controllers whose objects all depend on something
// shared, such as a ConfigMap of settings or a Namespace's labels.
//
//	err := ctrl.Watch(queue.On(configMaps.TypedInformer(),
//		informer.EnqueueTargets(foos.TypedInformer(), settingsOf, ctrl,
//			informer.WithPredicates(informer.LabelPresent("foo.example.com/settings")))))
//
// match is given the changed object and a candidate; nil matches every
// object of targets (name S then, as in EnqueueTargets[*corev1.ConfigMap]). A label selector fits it as
// func(_ *corev1.ConfigMap, foo *v1alpha1.Foo) bool { return sel.Matches(labels.Set(foo.Labels)) }.
// On update, a target is enqueued if it matches the old or the new object
// (once). A delete matches with the last state the informer knew; a delete
// without any known state cannot be matched and enqueues every target when
// match is not nil, so that no dependant misses it.
//
// Events that carry no change (the initial list, resyncs) enqueue at low
// priority, the others at normal priority. Every event walks the whole
// cache of targets, so put predicates on the handler (WithPredicates) to
// keep the fan-out to the changes that matter.
func EnqueueTargets[S, T Object](targets cache.TypedSharedIndexInformer[T], match func(changed S, target T) bool, q Queue[cache.ObjectName], opts ...Option) cache.TypedResourceEventHandler[S] {
	return NewHandler[S](&fanOut[S, T]{targets: targets, match: match, q: q}, opts...)
}

// fanOut is the handler of EnqueueTargets.
type fanOut[S, T Object] struct {
	targets cache.TypedSharedIndexInformer[T]
	match   func(changed S, target T) bool
	q       Queue[cache.ObjectName]
}

// enqueue adds, with add, the key of every target that matches one of
// changed (all targets if changed is empty or match is nil).
func (f *fanOut[S, T]) enqueue(add func(cache.ObjectName), changed ...S) {
	for _, obj := range f.targets.GetStore().List() {
		target, ok := obj.(T)
		if !ok {
			continue
		}
		if f.matches(target, changed) {
			add(cache.MetaObjectToName(target))
		}
	}
}

func (f *fanOut[S, T]) matches(target T, changed []S) bool {
	if f.match == nil || len(changed) == 0 {
		return true
	}
	for _, c := range changed {
		if f.match(c, target) {
			return true
		}
	}
	return false
}

// OnAdd implements cache.TypedResourceEventHandler.
func (f *fanOut[S, T]) OnAdd(obj S, isInInitialList bool) {
	if isInInitialList {
		f.enqueue(f.q.AddLowPriority, obj)
		return
	}
	f.enqueue(f.q.Add, obj)
}

// OnUpdate implements cache.TypedResourceEventHandler.
func (f *fanOut[S, T]) OnUpdate(oldObj, newObj S) {
	if !resourceVersionChanged(oldObj, newObj) {
		f.enqueue(f.q.AddLowPriority, newObj)
		return
	}
	f.enqueue(f.q.Add, oldObj, newObj)
}

// OnDelete implements cache.TypedResourceEventHandler.
func (f *fanOut[S, T]) OnDelete(obj cache.DeletedObject[S]) {
	var zero S
	if obj.OptionalObj == zero {
		f.enqueue(f.q.Add)
		return
	}
	f.enqueue(f.q.Add, obj.OptionalObj)
}
