// Package write brings objects of one kind to the state a controller wants,
// through any generated typed client, and keeps a reconcile from acting on
// an informer cache that has not yet seen the controller's own writes.
//
// Objects reads through an informer's cache and writes through a typed
// client: Ensure creates an object or updates only what its mutate function
// sets (what others added is left alone), Update and UpdateStatus change an
// existing object the same way, Patch sends a patch, and Delete deletes one
// incarnation of an object. Apply is the other write style: server-side
// apply of a generated apply configuration, skipped when it cannot change
// anything. None of them sends a request when nothing differs.
//
// Every write is remembered until the cache has caught up with it. Until
// then Get, and every write of that object, answer with an error matching
// reconcile.ErrStaleCache, which the worker loop of package queue requeues
// quietly: the reconcile runs again once the cache shows the write, instead
// of building on the object as it was before. A create answered with
// AlreadyExists and an update answered with 409 Conflict mean the same (the
// cache is behind, whoever wrote last) and give the same error.
//
//	deployments := write.New(factory.Apps().V1().Deployments().TypedInformer())
//	r := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
//		// Create the Deployment, or correct what this controller owns in it.
//		want := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
//		_, _, err := deployments.Ensure(ctx, kube.AppsV1().Deployments(key.Namespace), want, func(d *appsv1.Deployment) error {
//			d.Spec.Replicas = ptr.To[int32](2)
//			return nil
//		})
//		return reconcile.Result{}, err // a stale cache is requeued quietly
//	})
//
// # How the cache is known to be fresh
//
// A write is remembered with the resourceVersion the API server gave the
// written object (for a delete: the object's UID and the resourceVersion it
// was deleted at; a write that takes the last finalizer off an object being
// deleted counts as its delete). The cache has seen the write once it holds the object at
// that resourceVersion or a later one, once the informer's store has applied
// an event at that resourceVersion or later (client-go's
// LastStoreSyncResourceVersion: an object missing then was deleted since),
// or, for a delete, once it no longer holds that incarnation at that
// version. Versions are ordered as the API server orders them
// (k8s.io/apimachinery/pkg/util/resourceversion). Where they cannot be
// ordered (a store without a version, as with client-go's AtomicFIFO
// feature off, or versions of another form) any version but the one the
// write replaced counts as seen, and so does a missing object: nothing
// waits forever, and a write built on a cache that was behind after all
// meets AlreadyExists or a conflict, which is quiet too. Update,
// UpdateStatus, Patch and Delete judge the object they are given, which
// may be newer than the cache (a write's answer). Memory is one small
// entry per object written and not yet seen in the cache, and one per
// object that Apply wrote and the cache still holds.
package write

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Object is an API object type of a typed informer and client, such as
// *appsv1.Deployment.
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// Client is the part of a generated typed client that Objects writes
// through, bound to a namespace for namespaced kinds: pass
// kube.AppsV1().Deployments(namespace), or a fake clientset's.
type Client[T Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// StatusClient is the part of a generated typed client that writes the
// status subresource.
type StatusClient[T Object] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Change says what a write did.
type Change string

const (
	// Unchanged: the object already was as wanted; no request was sent.
	Unchanged Change = "unchanged"
	// Created: the object did not exist and was created.
	Created Change = "created"
	// Updated: the object existed and was updated.
	Updated Change = "updated"
)

// Objects reads objects of type T from an informer's cache and writes them,
// remembering its own writes until the cache has seen them (see the package
// doc). Make one per informer with New and share it among the reconciles of
// a controller; it is safe for concurrent use. Writes made by anything else
// than this Objects (another process, or a client used directly) are not
// remembered.
type Objects[T Object] struct {
	indexer cache.Indexer

	mu      sync.Mutex
	pending map[cache.ObjectName]written
	sweepAt int // len(pending) at which the next write sweeps it
	// applied is what this Objects last applied to each object, with the
	// resourceVersion the API server answered.
	applied        map[cache.ObjectName]appliedConfig
	appliedSweepAt int
}

// appliedConfig is one server-side apply, remembered to skip its repeats.
type appliedConfig struct {
	hash    [sha256.Size]byte
	version string
}

// written is what is remembered of one write until the cache shows it.
type written struct {
	uid types.UID
	// version is the resourceVersion of the written object, or of a deleted
	// object when it was deleted.
	version string
	// before is the resourceVersion the write replaced ("" for a create).
	before  string
	deleted bool
}

// minSweep is the least number of remembered writes that starts a sweep.
const minSweep = 64

// New returns the Objects of the objects in inf's cache. inf is a typed
// informer, such as factory.Apps().V1().Deployments().TypedInformer().
func New[T Object](inf cache.TypedSharedIndexInformer[T]) *Objects[T] {
	return &Objects[T]{indexer: inf.GetIndexer(), pending: map[cache.ObjectName]written{}, sweepAt: minSweep,
		applied: map[cache.ObjectName]appliedConfig{}, appliedSweepAt: minSweep}
}

// Get returns the cached object named name and whether the cache holds one.
// The object is the cache's: read it, never modify it. When the cache has
// not yet seen this Objects' last write of name, Get returns an error
// matching reconcile.ErrStaleCache instead.
func (o *Objects[T]) Get(name cache.ObjectName) (T, bool, error) {
	var zero T
	cached, found, err := o.cached(name)
	if err != nil {
		return zero, false, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.seenLocked(name, cached, found) {
		return zero, false, errStale(name)
	}
	return cached, found, nil
}

// Ensure makes the object named like want exist with what mutate sets.
//
// If the cache holds no such object, mutate is called on a copy of want and
// the copy is created. Otherwise mutate is called on a copy of the cached
// object, and the copy is sent as an update only if it then differs from
// the cached object (equality.Semantic): mutate sets what the controller
// owns and leaves the rest, such as what other controllers or users added,
// as it is. mutate may refuse, for example an object the controller does not
// own: its error is returned, wrapped, and nothing is written. mutate must
// not change the name or namespace.
//
// Ensure returns the object as written (or the cached one when Unchanged)
// and what it did. The errors of a stale cache match reconcile.ErrStaleCache
// (see the package doc) and keep the API error they stand for
// (apierrors.IsAlreadyExists and IsConflict still see it); mutate's error is
// returned wrapped; the others are the API server's as they are.
func (o *Objects[T]) Ensure(ctx context.Context, c Client[T], want T, mutate func(obj T) error) (T, Change, error) {
	var zero T
	name := cache.MetaObjectToName(want)
	cached, found, err := o.Get(name)
	if err != nil {
		return zero, Unchanged, err
	}
	if found {
		return o.update(name, cached, mutate, func(obj T) (T, error) { return c.Update(ctx, obj, metav1.UpdateOptions{}) })
	}
	obj, err := o.mutated(name, want, mutate)
	if err != nil {
		return zero, Unchanged, err
	}
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return zero, Unchanged, wrap("creating", err)
	}
	o.remember(name, "", created)
	return created, Created, nil
}

// Update changes the existing object obj by what mutate sets on a copy of
// it, and sends the update only if the copy then differs. obj is what the
// caller read: from the cache, or a write's answer, which may be newer; if
// it is older than this Objects' last write of it, nothing is sent and the
// error matches reconcile.ErrStaleCache. It returns the object as written,
// or obj when Unchanged. An update answered with 409 Conflict or NotFound
// (the cache was behind) matches reconcile.ErrStaleCache too.
func (o *Objects[T]) Update(ctx context.Context, c Client[T], obj T, mutate func(obj T) error) (T, Change, error) {
	return o.checkedUpdate(ctx, obj, mutate, func(obj T) (T, error) { return c.Update(ctx, obj, metav1.UpdateOptions{}) })
}

// UpdateStatus is Update through the status subresource: mutate sets the
// status on a copy of obj, and the status is written only if it changed.
func (o *Objects[T]) UpdateStatus(ctx context.Context, c StatusClient[T], obj T, mutate func(obj T) error) (T, Change, error) {
	return o.checkedUpdate(ctx, obj, mutate, func(obj T) (T, error) { return c.UpdateStatus(ctx, obj, metav1.UpdateOptions{}) })
}

// Patch sends a patch of obj, judged as by Update, and remembers the
// result. Unlike the other writes it cannot tell whether the patch changes
// anything: do not call it when nothing needs to change. A 409 Conflict
// (the resourceVersion in the patch is not the object's) matches
// reconcile.ErrStaleCache; other errors, such as a NotFound or the 422 of a
// failed test operation, are the API server's.
func (o *Objects[T]) Patch(ctx context.Context, c Client[T], obj T, pt types.PatchType, data []byte, subresources ...string) (T, error) {
	var zero T
	name := cache.MetaObjectToName(obj)
	if err := o.check(name, obj); err != nil {
		return zero, err
	}
	patched, err := c.Patch(ctx, name.Name, pt, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return zero, wrap("patching", err)
	}
	o.remember(name, obj.GetResourceVersion(), patched)
	return patched, nil
}

// Delete deletes obj, judged as by Update, and only that incarnation of it
// (a UID precondition; another incarnation answers with a conflict, which
// matches reconcile.ErrStaleCache), with the server's default propagation. It sends
// nothing for an object that is already being deleted, and a NotFound counts
// as deleted. Until the cache no longer shows obj as it was, Get reports the
// cache as stale.
func (o *Objects[T]) Delete(ctx context.Context, c Client[T], obj T) error {
	name := cache.MetaObjectToName(obj)
	if err := o.check(name, obj); err != nil {
		return err
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.Delete(ctx, name.Name, opts)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return wrap("deleting", err)
	}
	if v := obj.GetResourceVersion(); v != "" {
		o.mu.Lock()
		o.pending[name] = written{uid: uid, version: v, deleted: true}
		o.sweepLocked()
		o.mu.Unlock()
	}
	return nil
}

// Forget drops what is remembered of the writes of name, for example when
// the controller no longer cares about the object.
func (o *Objects[T]) Forget(name cache.ObjectName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.pending, name)
	delete(o.applied, name)
}

// Applier is the part of a generated typed client that applies
// configurations of type A server-side, such as
// kube.AppsV1().Deployments(namespace) with A
// *appsv1ac.DeploymentApplyConfiguration (k8s.io/client-go/applyconfigurations).
type Applier[T Object, A any] interface {
	Apply(ctx context.Context, cfg A, opts metav1.ApplyOptions) (T, error)
}

// Apply applies cfg server-side to the object named name as fieldManager,
// forcing ownership of the fields cfg sets: cfg is the whole of what the
// controller owns in the object, and fields it owned before and cfg leaves
// out are removed by the API server. It is the other write style beside
// Ensure, with the same read-your-own-writes gate.
//
// A repeated apply is skipped, without a request, when it cannot change
// anything: the cache shows the object at the resourceVersion the API
// server answered this Objects' last apply of the same configuration (the
// same JSON) with, so nobody has written the object since. Any other write
// of the object, by anyone, makes the next Apply send its configuration
// again; an apply that changes nothing leaves the resourceVersion as it was,
// so the one after it is skipped again. The object's managedFields are not
// needed, so informers may drop them (operator.Flags does by default).
//
// Apply returns the object as the API server answered (or the cached one
// when nothing was sent) and Created, Updated or Unchanged.
func Apply[T Object, A any](ctx context.Context, o *Objects[T], c Applier[T, A], name cache.ObjectName, cfg A, fieldManager string) (T, Change, error) {
	var zero T
	data, err := json.Marshal(cfg)
	if err != nil {
		return zero, Unchanged, fmt.Errorf("write: %s: encoding the apply configuration: %w", name, err)
	}
	hash := sha256.Sum256(data)
	cached, found, err := o.Get(name)
	if err != nil {
		return zero, Unchanged, err
	}
	o.mu.Lock()
	last, ok := o.applied[name]
	o.mu.Unlock()
	if found && ok && last.hash == hash && last.version == cached.GetResourceVersion() {
		return cached, Unchanged, nil
	}
	applied, err := c.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return zero, Unchanged, wrap("applying", err)
	}
	before := ""
	if found {
		before = cached.GetResourceVersion()
	}
	o.remember(name, before, applied)
	o.mu.Lock()
	o.applied[name] = appliedConfig{hash: hash, version: applied.GetResourceVersion()}
	o.sweepLocked()
	o.mu.Unlock()
	switch {
	case !found:
		return applied, Created, nil
	case applied.GetResourceVersion() == before:
		return applied, Unchanged, nil
	}
	return applied, Updated, nil
}

// checkedUpdate checks that obj is not older than the last write of it,
// then updates.
func (o *Objects[T]) checkedUpdate(ctx context.Context, obj T, mutate func(T) error, send func(T) (T, error)) (T, Change, error) {
	var zero T
	name := cache.MetaObjectToName(obj)
	if err := o.check(name, obj); err != nil {
		return zero, Unchanged, err
	}
	return o.update(name, obj, mutate, send)
}

// check returns an error matching reconcile.ErrStaleCache when obj, read by
// the caller (from the cache or a write's answer), is older than this
// Objects' last write of it.
func (o *Objects[T]) check(name cache.ObjectName, obj T) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.seenLocked(name, obj, true) {
		return errStale(name)
	}
	return nil
}

func errStale(name cache.ObjectName) error {
	return reconcile.StaleCache(fmt.Errorf("%s: the cache is behind this controller's last write of it", name))
}

// update mutates a copy of current and sends it if it differs.
func (o *Objects[T]) update(name cache.ObjectName, current T, mutate func(T) error, send func(T) (T, error)) (T, Change, error) {
	var zero T
	obj, err := o.mutated(name, current, mutate)
	if err != nil {
		return zero, Unchanged, err
	}
	if equality.Semantic.DeepEqual(current, obj) {
		return current, Unchanged, nil
	}
	updated, err := send(obj)
	if err != nil {
		return zero, Unchanged, wrap("updating", err)
	}
	o.remember(name, current.GetResourceVersion(), updated)
	return updated, Updated, nil
}

// mutated returns a copy of obj changed by mutate.
func (o *Objects[T]) mutated(name cache.ObjectName, obj T, mutate func(T) error) (T, error) {
	var zero T
	cp, ok := obj.DeepCopyObject().(T)
	if !ok {
		return zero, fmt.Errorf("write: %s: DeepCopyObject returned a %T", name, obj.DeepCopyObject())
	}
	if mutate != nil {
		if err := mutate(cp); err != nil {
			return zero, fmt.Errorf("%s: %w", name, err)
		}
	}
	if got := cache.MetaObjectToName(cp); got != name {
		return zero, fmt.Errorf("write: %s: the mutate function renamed the object to %s", name, got)
	}
	return cp, nil
}

// wrap returns the API error of a write of name as it is, or, when it says
// the cache is behind (a conflict, an AlreadyExists, or a NotFound of an
// update), wrapped to match reconcile.ErrStaleCache. API errors name the
// object already.
func wrap(verb string, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || verb == "updating" && apierrors.IsNotFound(err) {
		return reconcile.StaleCache(err)
	}
	return err
}

// remember records a successful write of name that replaced the version
// before (if any) and gave obj.
func (o *Objects[T]) remember(name cache.ObjectName, before string, obj T) {
	v := obj.GetResourceVersion()
	// A write that leaves an object being deleted without finalizers
	// deleted it; the API server answers with the version before that.
	gone := obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0
	if v == "" || v == before && !gone {
		return // nothing to compare the cache with, or nothing changed
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending[name] = written{uid: obj.GetUID(), version: v, before: before, deleted: gone}
	o.sweepLocked()
}

// sweepLocked keeps the maps from piling up entries of objects never read
// again: once pending has grown to twice its size after its last sweep, it
// drops the writes the cache has seen, and once applied has, the applies to
// objects the cache no longer holds. The caller holds o.mu.
func (o *Objects[T]) sweepLocked() {
	if len(o.pending) >= o.sweepAt {
		for name := range o.pending {
			if cached, found, err := o.cached(name); err == nil {
				o.seenLocked(name, cached, found)
			}
		}
		o.sweepAt = max(minSweep, 2*len(o.pending))
	}
	if len(o.applied) >= o.appliedSweepAt {
		for name := range o.applied {
			if _, found, err := o.cached(name); err == nil && !found {
				delete(o.applied, name)
			}
		}
		o.appliedSweepAt = max(minSweep, 2*len(o.applied))
	}
}

// cached reads name from the cache.
func (o *Objects[T]) cached(name cache.ObjectName) (T, bool, error) {
	var zero T
	item, found, err := o.indexer.GetByKey(name.String())
	if err != nil || !found {
		return zero, false, err
	}
	obj, ok := item.(T)
	if !ok {
		return zero, false, fmt.Errorf("write: the cache holds a %T for %s, not a %T", item, name, zero)
	}
	return obj, true, nil
}

// seenLocked reports whether the cache, which holds cached for name (if
// found), has seen the last remembered write of name, and forgets the write
// once it has. The caller holds o.mu.
func (o *Objects[T]) seenLocked(name cache.ObjectName, cached T, found bool) bool {
	w, ok := o.pending[name]
	if !ok {
		return true
	}
	seen := w.seenIn(cached, found, o.indexer.LastStoreSyncResourceVersion())
	if seen {
		delete(o.pending, name)
	}
	return seen
}

// seenIn reports whether a cache that holds cached (if found), and whose
// store last applied an event at storeVersion, has seen the write w.
func (w written) seenIn(cached metav1.Object, found bool, storeVersion string) bool {
	if w.deleted {
		// Seen once that incarnation is gone or has changed since.
		if !found || cached.GetUID() != w.uid {
			return true
		}
		c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), w.version)
		return err == nil && c > 0 || err != nil && cached.GetResourceVersion() != w.version
	}
	if found && cached.GetUID() == w.uid {
		c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), w.version)
		if err != nil {
			// Versions that cannot be ordered: anything but the version
			// the write replaced is at least as new.
			return cached.GetResourceVersion() != w.before
		}
		if c >= 0 {
			return true
		}
	}
	// The object is missing, another incarnation, or older than the write:
	// seen only if the store has applied every event up to the write.
	c, err := resourceversion.CompareResourceVersion(storeVersion, w.version)
	if err != nil {
		// The store cannot say (its version is unknown or not ordered):
		// do not wait. A write built on what the cache shows then meets
		// AlreadyExists or a conflict, which is quiet too.
		return !found || cached.GetUID() != w.uid
	}
	return c >= 0
}
