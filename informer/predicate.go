package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Predicate decides whether an event reaches a handler's callbacks. Each
// method judges one kind of event and returns true to let it through.
// The handlers of this package call predicates with objects of their own
// type T, so a predicate may type-assert to that type. A delete is judged on
// the OptionalObj of its cache.DeletedObject: the last state the informer
// knew, which is stale when the informer noticed the delete only on a
// relist. A delete whose final state is unknown and that carries no object
// is not judged at all: it passes every predicate unasked (see NewHandler).
// Predicates are thus never given a tombstone or a nil object. They must
// not modify the objects and must be safe for concurrent use when shared
// between handlers.
//
// There are two kinds of predicates, and the difference matters for
// updates:
//
//   - An ObjectPredicate judges a single object (LabelSelector, ObjectFunc).
//     It passes an add or a delete when the object satisfies it, and an
//     update when the old or the new object satisfies it, so that an object
//     moving out of the selection is still seen once. And, Or and Not
//     combine object predicates object by object before that rule is
//     applied: Not(LabelSelector(s)) passes an update when the old or the
//     new object is outside s.
//   - Any other Predicate judges events (GenerationChanged,
//     ResourceVersionChanged, UpdateFunc, PredicateFuncs). And, Or and Not
//     over these, or over a mix of both kinds, combine the results of the
//     same method: And(p, q).Update(o, n) is p.Update(o, n) && q.Update(o, n).
type Predicate interface {
	// Add judges an added object.
	Add(obj metav1.Object) bool
	// Update judges a change from oldObj to newObj.
	Update(oldObj, newObj metav1.Object) bool
	// Delete judges a deleted object (the last state the informer knew,
	// when it noticed the delete only on a relist).
	Delete(obj metav1.Object) bool
}

// ObjectPredicate is a Predicate that judges single objects: adds and
// deletes pass when the object satisfies it, updates when the old or the
// new object does.
type ObjectPredicate func(obj metav1.Object) bool

// Add reports p(obj).
func (p ObjectPredicate) Add(obj metav1.Object) bool { return p(obj) }

// Update reports p(oldObj) || p(newObj).
func (p ObjectPredicate) Update(oldObj, newObj metav1.Object) bool { return p(oldObj) || p(newObj) }

// Delete reports p(obj).
func (p ObjectPredicate) Delete(obj metav1.Object) bool { return p(obj) }

// PredicateFuncs is a Predicate built from functions; a nil function
// passes every event of its kind.
type PredicateFuncs struct {
	AddFunc    func(obj metav1.Object) bool
	UpdateFunc func(oldObj, newObj metav1.Object) bool
	DeleteFunc func(obj metav1.Object) bool
}

// Add reports AddFunc(obj), or true if AddFunc is nil.
func (p PredicateFuncs) Add(obj metav1.Object) bool {
	return p.AddFunc == nil || p.AddFunc(obj)
}

// Update reports UpdateFunc(oldObj, newObj), or true if UpdateFunc is nil.
func (p PredicateFuncs) Update(oldObj, newObj metav1.Object) bool {
	return p.UpdateFunc == nil || p.UpdateFunc(oldObj, newObj)
}

// Delete reports DeleteFunc(obj), or true if DeleteFunc is nil.
func (p PredicateFuncs) Delete(obj metav1.Object) bool {
	return p.DeleteFunc == nil || p.DeleteFunc(obj)
}

// ObjectFunc turns a function on the concrete type T into an
// ObjectPredicate. Objects that are not a T do not satisfy it. fn must not
// be nil.
func ObjectFunc[T Object](fn func(obj T) bool) ObjectPredicate {
	return func(obj metav1.Object) bool {
		t, ok := obj.(T)
		return ok && fn(t)
	}
}

// UpdateFunc returns a Predicate that passes every add and delete and
// judges updates with fn on the concrete type T. Updates whose objects are
// not both a T are rejected. fn must not be nil.
func UpdateFunc[T Object](fn func(oldObj, newObj T) bool) Predicate {
	return PredicateFuncs{UpdateFunc: func(oldObj, newObj metav1.Object) bool {
		o, ok := oldObj.(T)
		if !ok {
			return false
		}
		n, ok := newObj.(T)
		return ok && fn(o, n)
	}}
}

// LabelSelector returns an ObjectPredicate satisfied by objects whose
// labels match sel. A nil sel matches nothing, like the selector
// metav1.LabelSelectorAsSelector makes from a nil *metav1.LabelSelector;
// use labels.Everything() to match everything.
func LabelSelector(sel labels.Selector) ObjectPredicate {
	if sel == nil {
		sel = labels.Nothing()
	}
	return func(obj metav1.Object) bool {
		return sel.Matches(labels.Set(obj.GetLabels()))
	}
}

// LabelPresent returns an ObjectPredicate satisfied by objects that carry
// the label key, whatever its value: an update passes when the old or the
// new object has it, so the removal of the label is seen once.
func LabelPresent(key string) ObjectPredicate {
	return func(obj metav1.Object) bool {
		_, ok := obj.GetLabels()[key]
		return ok
	}
}

// LabelChanged returns a Predicate that passes adds and deletes, and
// updates only when the label key was added, removed or given another
// value.
func LabelChanged(key string) Predicate {
	return PredicateFuncs{UpdateFunc: func(oldObj, newObj metav1.Object) bool {
		o, hadOld := oldObj.GetLabels()[key]
		n, hasNew := newObj.GetLabels()[key]
		return hadOld != hasNew || o != n
	}}
}

// GenerationChanged returns a Predicate that passes adds and deletes, and
// updates only when metadata.generation changed. The API server bumps the
// generation on changes to an object's spec (for most built-in types and
// for custom resources with a status subresource), so this skips updates
// that touch only status or metadata. Objects of types that do not track
// generation (ConfigMaps, for example) keep the same generation across
// updates and so never pass an update.
func GenerationChanged() Predicate {
	return PredicateFuncs{UpdateFunc: func(oldObj, newObj metav1.Object) bool {
		return oldObj.GetGeneration() != newObj.GetGeneration()
	}}
}

// ResourceVersionChanged returns a Predicate that passes adds and deletes,
// and updates unless the old and new objects carry the same, non-empty
// resourceVersion: it drops the informer's periodic resyncs and relists that
// found nothing new. Do not use it when the controller relies on resyncs to
// retry work that depends on something outside the watched object.
func ResourceVersionChanged() Predicate {
	return PredicateFuncs{UpdateFunc: resourceVersionChanged}
}

func resourceVersionChanged(oldObj, newObj metav1.Object) bool {
	rv := newObj.GetResourceVersion()
	return rv == "" || rv != oldObj.GetResourceVersion()
}

// And returns a Predicate that passes an event when all ps pass it. And()
// passes everything. If every p is an ObjectPredicate, the result is an
// ObjectPredicate satisfied by objects that satisfy all ps. nil entries are
// ignored.
func And(ps ...Predicate) Predicate {
	ps = compact(ps)
	if objs, ok := objectPredicates(ps); ok {
		return ObjectPredicate(func(obj metav1.Object) bool {
			for _, p := range objs {
				if !p(obj) {
					return false
				}
			}
			return true
		})
	}
	return PredicateFuncs{
		AddFunc: func(obj metav1.Object) bool {
			for _, p := range ps {
				if !p.Add(obj) {
					return false
				}
			}
			return true
		},
		UpdateFunc: func(oldObj, newObj metav1.Object) bool {
			for _, p := range ps {
				if !p.Update(oldObj, newObj) {
					return false
				}
			}
			return true
		},
		DeleteFunc: func(obj metav1.Object) bool {
			for _, p := range ps {
				if !p.Delete(obj) {
					return false
				}
			}
			return true
		},
	}
}

// Or returns a Predicate that passes an event when at least one of ps
// passes it. Or() passes nothing. If every p is an ObjectPredicate, the
// result is an ObjectPredicate satisfied by objects that satisfy any of ps.
// nil entries are ignored.
func Or(ps ...Predicate) Predicate {
	ps = compact(ps)
	if objs, ok := objectPredicates(ps); ok {
		return ObjectPredicate(func(obj metav1.Object) bool {
			for _, p := range objs {
				if p(obj) {
					return true
				}
			}
			return false
		})
	}
	return PredicateFuncs{
		AddFunc: func(obj metav1.Object) bool {
			for _, p := range ps {
				if p.Add(obj) {
					return true
				}
			}
			return false
		},
		UpdateFunc: func(oldObj, newObj metav1.Object) bool {
			for _, p := range ps {
				if p.Update(oldObj, newObj) {
					return true
				}
			}
			return false
		},
		DeleteFunc: func(obj metav1.Object) bool {
			for _, p := range ps {
				if p.Delete(obj) {
					return true
				}
			}
			return false
		},
	}
}

// Not returns a Predicate that passes exactly the events p rejects. If p is
// an ObjectPredicate, the result is the ObjectPredicate satisfied by the
// objects that do not satisfy p (so its updates pass when the old or the
// new object is outside p). Not(nil) passes nothing.
func Not(p Predicate) Predicate {
	if isNilPredicate(p) {
		return Or()
	}
	if q, ok := p.(ObjectPredicate); ok {
		return ObjectPredicate(func(obj metav1.Object) bool { return !q(obj) })
	}
	return PredicateFuncs{
		AddFunc:    func(obj metav1.Object) bool { return !p.Add(obj) },
		UpdateFunc: func(oldObj, newObj metav1.Object) bool { return !p.Update(oldObj, newObj) },
		DeleteFunc: func(obj metav1.Object) bool { return !p.Delete(obj) },
	}
}

// compact returns ps without nil entries, in a new slice.
func compact(ps []Predicate) []Predicate {
	out := make([]Predicate, 0, len(ps))
	for _, p := range ps {
		if !isNilPredicate(p) {
			out = append(out, p)
		}
	}
	return out
}

// isNilPredicate reports whether p is nil or a nil ObjectPredicate.
func isNilPredicate(p Predicate) bool {
	if p == nil {
		return true
	}
	op, ok := p.(ObjectPredicate)
	return ok && op == nil
}

// objectPredicates returns ps as ObjectPredicates if every one of them is.
func objectPredicates(ps []Predicate) ([]ObjectPredicate, bool) {
	objs := make([]ObjectPredicate, 0, len(ps))
	for _, p := range ps {
		op, ok := p.(ObjectPredicate)
		if !ok {
			return nil, false
		}
		objs = append(objs, op)
	}
	return objs, true
}
