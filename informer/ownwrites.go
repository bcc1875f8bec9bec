package informer

import "sync"

// OwnWrites tells a reconcile whether the informer's cache has seen the
// process's own last write of an object yet. A controller that updates an
// object (say, its status) is often woken again before the watch event of
// that update arrives, by a change of another object; a write built from the
// cached object then carries the replaced resourceVersion and fails with a
// 409 Conflict. With OwnWrites the reconcile returns instead: the update's
// watch event brings the key back, with the cache caught up.
//
//	if writes.Stale(key, cm.ResourceVersion) {
//		return nil // the update's watch event brings key back
//	}
//	updated, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
//	if err != nil {
//		return err
//	}
//	writes.Replaced(key, cm.ResourceVersion, updated.ResourceVersion)
//
// It only compares resourceVersions for equality, as clients may. The zero
// value is ready to use and safe for concurrent use; it holds one entry per
// key written and not yet seen in the cache.
type OwnWrites[K comparable] struct {
	replaced sync.Map // K -> the resourceVersion the last write replaced
}

// Replaced records a successful write of key that replaced the object at
// resourceVersion old with one at resourceVersion updated. A write that did
// not change the resourceVersion, or of an object without one, is not
// recorded.
func (w *OwnWrites[K]) Replaced(key K, old, updated string) {
	if old != "" && updated != old {
		w.replaced.Store(key, old)
	}
}

// Stale reports whether cached, the resourceVersion of key in the cache, is
// the one the process's last write of key replaced: the cache has not seen
// that write yet. Once the cache has moved on, the key is forgotten.
func (w *OwnWrites[K]) Stale(key K, cached string) bool {
	old, ok := w.replaced.Load(key)
	if !ok {
		return false
	}
	if old == cached {
		return true
	}
	w.replaced.CompareAndDelete(key, old)
	return false
}

// Forget drops what is recorded for key, for example when its object is
// deleted.
func (w *OwnWrites[K]) Forget(key K) { w.replaced.Delete(key) }
