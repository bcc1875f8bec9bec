// Package write brings objects of one kind to the state a controller wants,
// through any generated typed client, and keeps a reconcile from acting on
// an informer cache that has not yet seen the controller's own writes.
//
// Objects reads through an informer's cache and writes through a typed
// client: Ensure creates an object or updates only what its mutate function
// sets (what others added is left alone), Update and UpdateStatus change an
// existing object the same way, Patch sends a patch, and Delete deletes one
// incarnation of an object. Apply and ApplyStatus are the other write style:
// server-side apply of a generated apply configuration to an object or its
// status, skipped when it cannot change anything. None of them sends a
// request when nothing differs.
//
// Every write is remembered until the cache has caught up with it. Until
// then Get, and every write of that object, answer with an error matching
// reconcile.ErrStaleCache, which the worker loop of package queue requeues
// quietly: the reconcile runs again once the cache shows the write, instead
// of building on the object as it was before.
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
// # The informer Objects needs
//
// New takes the informer whose cache the controller reads the objects from.
// It must watch every object this Objects writes: an informer restricted by
// a label or field selector, to one namespace, or to a shard (package
// queue/shard) never shows an object outside what it watches, so a write of
// such an object is never seen. Objects does not wait for it forever (see
// below), but every write of it then fails loudly.
//
// # Objects an informer trimmed
//
// An informer set up with informer.Trim keeps only some fields of each
// object. Ensure and Update never send such an object whole, which would
// erase what the cache did not keep: they send the change mutate made to
// the trimmed copy as a patch, guarded by the copy's resourceVersion (a
// conflict is judged like any other). For the kinds of k8s.io/api it is a
// strategic merge patch, so a container or port that mutate changes or
// adds by name leaves the others as they are, and a list such a patch
// replaces whole (a pod's tolerations) is one the informer kept whole or
// not at all, as informer.Trim refuses to keep only some fields of its
// items; for custom resources a JSON merge patch, and a change to a list
// there fails with an error wrapping ErrTrimmed, as the list would be
// replaced by what the cache kept of its items. A change to the status
// fails the same way, whether or not the kind has a status subresource (a
// patch of the object does not write the status of a kind that has one,
// and the trimmed copy cannot show that it was left out), and so does
// UpdateStatus of a trimmed object: write its status with ApplyStatus or
// Patch. None of these refusals sends a request. mutate sees, and may
// change, only what the informer kept.
//
// # When an answer is quiet, and for how long
//
// An error matching reconcile.ErrStaleCache says the cache is behind, and
// nothing else: it is given only while that is provably so, and never for
// longer than the stale limit (WithStaleLimit, one minute by default):
//
//   - Get, and a write of an object older than this Objects' last write of
//     it, are quiet while the cache has not seen that write.
//   - A write answered with AlreadyExists, 409 Conflict, NotFound or 422
//     Invalid is judged by reading the object back from the API server. If
//     the server still has the object as the write found it (the same
//     incarnation at the same resourceVersion, or no object at all), the
//     answer is about the write itself and is returned as it is. Ensure
//     calls mutate on the object a create met, so that an object it refuses
//     (one the controller does not own) gives mutate's error at once,
//     whether or not the cache shows it. Otherwise the answer is quiet
//     while the cache has not seen the object as the server has it, and
//     that version is remembered like a write of this Objects'.
//   - Once the cache has seen that version (it holds the object at that
//     version or later, or its store has applied a later event or
//     bookmark), the same answer is the real error it is: an object the
//     informer does not watch, or a conflict with a write the cache
//     already shows. One exception is quiet, for a single retry: a create
//     answered with AlreadyExists of an object the cache shows by now, as
//     the next reconcile updates it instead. On a server without
//     resourceVersions (a fake clientset), where nothing shows whether the
//     cache is behind, such a create is quiet until the cache holds the
//     object, within the stale limit.
//   - A version remembered for longer than the stale limit without the
//     cache showing it is an error that does not match
//     reconcile.ErrStaleCache (it wraps the answer that started the wait,
//     if any): the key is retried with backoff, counted and logged as a
//     failure until the cache shows the version or Forget drops it.
//
// So a key is quiet for at most the stale limit plus one retry backoff of
// its worker loop. Other errors, such as a failed read-back, are returned
// as they are, joined with the answer.
//
// # How the cache is known to be fresh
//
// A write is remembered with the resourceVersion the API server gave the
// written object (a write that takes the last finalizer off an object being
// deleted counts as its delete). The cache has seen the write once it holds
// the object at that resourceVersion or a later one, or once the informer's
// store has applied an event at that resourceVersion or later (client-go's
// LastStoreSyncResourceVersion: an object missing then was deleted since).
// A delete is remembered with the object's UID: the cache has seen it once
// it no longer holds that incarnation, or holds it marked for deletion at a
// later version than the caller read. Versions are ordered as the API
// server orders them (k8s.io/apimachinery/pkg/util/resourceversion). Where
// they cannot be ordered (a store without a version, as with client-go's
// AtomicFIFO feature off, or versions of another form) any version but the
// one the write replaced counts as seen, and so does a missing object:
// nothing waits for a proof that cannot come. Update, UpdateStatus, Patch
// and Delete judge the object they are given, which may be newer than the
// cache (a write's answer), and never take it as proof that the cache has
// caught up. Memory is one small entry per object written and not yet seen
// in the cache, one per object that Apply wrote and the cache still
// holds, and a copy of each object whose last update changed nothing the
// controller owns (see Traces).
//
// # Traces
//
// With a traced reconcile (queue.WithTracing), every write sent marks the
// reconcile as one that wrote (tracing.MarkWrite), just before its
// request goes out: a call that sends nothing (an Unchanged update, a
// Delete of an object already being deleted, a write refused for a stale
// cache) does not mark it. The creates and
// updates of an object itself (Ensure, Update) set its
// tracing.Annotation to the reconcile's trace context, so that the
// reconcile its event sets off, in this controller or another, links to
// the span of the write. The annotation is set only on a write that is
// sent anyway, because something the controller owns differs; it is never
// compared (the mutated copy keeps the cached object's value, also where
// mutate replaces all the annotations), so it cannot make a write of its
// own, and an idle reconcile still writes nothing. Status writes and server-side applies do not
// carry it (their requests still carry the traceparent header).
//
// An update sent because something differs may still change nothing the
// controller owns: a mutating webhook or defaulting undoes it. Untraced,
// the API server answers at the version the object had, and no event
// follows; traced, the annotation alone would change, and its event would
// set off a reconcile that writes again, for ever. So an update whose
// answer is at the version the object had, or differs from the object
// before it in nothing but the annotation and what the server sets on a
// write (the resourceVersion, the managedFields, the generation, which a
// Deployment's annotations move on too), is remembered for the object (a
// copy of the answer, without managedFields) and reported Unchanged. The
// object's next updates are sent without the annotation while the object
// (as read by the caller) differs from that answer in nothing but those
// fields and the status, which is not what such an update writes
// (another writer's annotation-only update, such as another traced
// controller's that the webhook undid, does not count as a change, nor
// does the status in which a workload's controller records the new
// generation), whatever they change: most likely they change nothing,
// and no event follows. An update so sent that does change the object (a
// change the webhook lets through) still carries the traceparent header,
// but the reconcile its event sets off has no link to it; it forgets the
// entry, as any update that changes the object does, so the next update
// carries the annotation again. Forget drops the entry too, and entries
// of objects the cache shows changed or gone are swept as the other
// per-object entries are. The loop thus ends after one write per writer
// where untraced it ends after none.
//
// The answer to the patch of a trimmed object is the whole object, while
// the object the patch was made from is the trimmed copy. The answer is
// judged, and remembered, as far as the controller could see or set it:
// its fields that the trimmed copy or mutate's result has (through maps
// key by key, through lists item by item, each item on the fields that any
// item has), with the identity, the trace context annotation and the mark
// the informer keeps; a field both show as a zero value (as a Go type
// without omitempty shows a field the informer did not keep) is taken as
// that value, not judged, unless mutate cleared it (a pointer to 0 set to
// nil: what the server then makes of it is judged). So the same holds for trimmed objects, and a
// change the server keeps is Updated. A field the server sets on that
// write (a default, a webhook's addition) counts as a change where the
// trimmed copy or mutate's result has that field other than zero, on any
// item of its list: such a default costs one more write, which settles.
// Where neither has it other than zero, it is not judged, even where the
// informer keeps it: the update is Unchanged, and the field counts as a
// change only once another write moves the object on, which costs at most
// one more write. A field mutate sets that the informer does not keep is a
// change each time (the cache never shows it): each reconcile sends it
// again, untraced at no new version, traced with the annotation, whose
// event sets off the next reconcile, a loop. mutate should set only what
// the informer keeps.
package write

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Object is an API object type of a typed informer and client, such as
// *appsv1.Deployment.
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// Getter is the read of a generated typed client that judges a write's
// answer against the API server.
type Getter[T Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// Client is the part of a generated typed client that Objects writes
// through, bound to a namespace for namespaced kinds: pass
// kube.AppsV1().Deployments(namespace), or a fake clientset's.
type Client[T Object] interface {
	Getter[T]
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// StatusClient is the part of a generated typed client that writes the
// status subresource.
type StatusClient[T Object] interface {
	Getter[T]
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Change says what a write did.
type Change string

const (
	// Unchanged: the object already was as wanted, so no request was sent,
	// or the API server answered with the object at the version it had, or
	// (an update of the object itself) changed in nothing but its
	// tracing.Annotation and what the server sets on a write (for a
	// trimmed object, judged on what the controller could see or set): a
	// webhook or defaulting undid the change (see the package doc's
	// Traces).
	Unchanged Change = "unchanged"
	// Created: the object did not exist and was created.
	Created Change = "created"
	// Updated: the object existed and was updated.
	Updated Change = "updated"
)

// DefaultStaleLimit is how long a version stays remembered without the
// cache showing it before the wait is an error (see the package doc).
const DefaultStaleLimit = time.Minute

// Option configures an Objects.
type Option func(*config)

type config struct {
	staleLimit time.Duration
	clock      clock.PassiveClock
}

// WithStaleLimit sets how long at most a key is requeued quietly while the
// cache does not show a remembered version (DefaultStaleLimit when d is not
// positive). Longer tolerates a slower watch; shorter surfaces an informer
// that does not watch what the controller writes sooner.
func WithStaleLimit(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.staleLimit = d
		}
	}
}

// WithClock sets the clock that times the stale limit, for tests.
func WithClock(c clock.PassiveClock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// Objects reads objects of type T from an informer's cache and writes them,
// remembering its own writes until the cache has seen them (see the package
// doc). Make one per informer with New and share it among the reconciles of
// a controller; it is safe for concurrent use. Writes made by anything else
// than this Objects (another process, or a client used directly) are not
// remembered.
type Objects[T Object] struct {
	indexer cache.Indexer
	cfg     config

	mu      sync.Mutex
	pending map[cache.ObjectName]written
	sweepAt int // len(pending) at which the next write sweeps it
	// pendingPeak is the most writes pending has held since it was made.
	pendingPeak int
	// applied is what this Objects last applied to each object, with the
	// resourceVersion the API server answered.
	applied        map[appliedKey]appliedConfig
	appliedSweepAt int
	// settled holds, by name, a copy of the API server's answer to the
	// last update of an object when that update changed nothing the
	// controller owns (the server answered at the version the object had,
	// or with only the tracing.Annotation changed: a webhook or defaulting
	// undid the rest), without managedFields; for a trimmed object, what
	// of the answer the controller could see or set (trimmedAnswer), to
	// be compared with the cache's trimmed copies. The object's next
	// updates carry no trace context annotation while it differs from
	// that answer in nothing but the annotation (see settledHolds).
	settled        map[cache.ObjectName]T
	settledSweepAt int
}

// settledHolds reports whether obj is still as the update whose answer
// settled is left it: the same incarnation, and the same but for the
// tracing.Annotation, what the server sets on a write, and the status,
// which is not what an update of the object writes (a workload's controller
// records in it the generation that the annotation moved on). Judged by
// content, not by version: another writer's annotation-only update
// (another controller whose update a webhook undid, also traced) moves
// the version on and changes nothing else.
func settledHolds[T Object](settled, obj T) bool {
	if obj.GetUID() != settled.GetUID() {
		return false
	}
	return obj.GetResourceVersion() == settled.GetResourceVersion() || sameBut(settled, obj, true)
}

// appliedKey names what an apply went to: an object, or its status.
type appliedKey struct {
	name   cache.ObjectName
	status bool
}

// appliedConfig is one server-side apply, remembered to skip its repeats.
type appliedConfig struct {
	hash    [sha256.Size]byte
	version string
}

// written is what is remembered of one version of an object until the
// cache shows it: a write's answer, or what the API server had when it
// refused a write.
type written struct {
	uid types.UID
	// version is the resourceVersion of the written object; for a delete,
	// the version the deleted object had before it. It is empty for an
	// object a create met on a server without versions (a fake
	// clientset), which the cache has seen once it holds it.
	version string
	// before is the resourceVersion the write replaced ("" for a create).
	before  string
	deleted bool
	// at is when the version was remembered.
	at time.Time
	// cause is the API server's answer that this version explains; nil for
	// this Objects' own writes.
	cause error
}

// minSweep is the least number of remembered writes that starts a sweep.
const minSweep = 64

// New returns the Objects of the objects in inf's cache. inf is a typed
// informer, such as factory.Apps().V1().Deployments().TypedInformer(), that
// watches every object the Objects writes (see the package doc).
func New[T Object](inf cache.TypedSharedIndexInformer[T], opts ...Option) *Objects[T] {
	cfg := config{staleLimit: DefaultStaleLimit, clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(&cfg)
	}
	return &Objects[T]{indexer: inf.GetIndexer(), cfg: cfg, pending: map[cache.ObjectName]written{}, sweepAt: minSweep,
		applied: map[appliedKey]appliedConfig{}, appliedSweepAt: minSweep,
		settled: map[cache.ObjectName]T{}, settledSweepAt: minSweep}
}

// Get returns the cached object named name and whether the cache holds one.
// The object is the cache's: read it, never modify it. When the cache has
// not yet seen this Objects' last write of name, Get returns an error
// matching reconcile.ErrStaleCache instead, or, past the stale limit, an
// error that does not (see the package doc).
func (o *Objects[T]) Get(name cache.ObjectName) (T, bool, error) {
	var zero T
	cached, found, storeVersion, err := o.cached(name)
	if err != nil {
		return zero, false, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.judgeLocked(name, cached, found, storeVersion, true); err != nil {
		return zero, false, err
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
// own: its error is returned, wrapped, and nothing is written. A create
// that meets an object the cache does not show calls mutate on a copy of
// that object too, so that a refusal does not wait for the cache. mutate
// must not change the name or namespace, and must set nothing in the
// status: an update of the object does not write a status subresource, and
// a status the API server left out is an error (use UpdateStatus); for an
// object its informer trimmed, a status change is an error wrapping
// ErrTrimmed, and nothing is sent.
//
// Ensure returns the object as written (when Unchanged, the cached one, or
// the API server's answer to an update that changed nothing it owns)
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
		return o.update(ctx, c, name, cached, mutate, wholeWriter(ctx, c))
	}
	obj, err := o.mutated(name, want, mutate)
	if err != nil {
		return zero, Unchanged, err
	}
	tracing.SetAnnotation(ctx, obj)
	tracing.MarkWrite(ctx)
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return zero, Unchanged, o.verdict(ctx, c, name, zero, false, err, func(existing T) error {
			_, err := o.mutated(name, existing, mutate)
			return err
		})
	}
	o.remember(name, "", created)
	return created, Created, nil
}

// Update changes the existing object obj by what mutate sets on a copy of
// it, and sends the update only if the copy then differs. obj is what the
// caller read: from the cache, or a write's answer, which may be newer; if
// it is older than this Objects' last write of it, nothing is sent and the
// error matches reconcile.ErrStaleCache. It returns the object as written,
// or, when Unchanged, obj or the API server's answer to an update that
// changed nothing it owns. Answers of the API server are judged as the
// package doc says; mutate must set nothing in the status, as for Ensure.
func (o *Objects[T]) Update(ctx context.Context, c Client[T], obj T, mutate func(obj T) error) (T, Change, error) {
	return o.checkedUpdate(ctx, c, obj, mutate, wholeWriter(ctx, c))
}

// UpdateStatus is Update through the status subresource: mutate sets the
// status on a copy of obj, and the status is written only if it changed.
func (o *Objects[T]) UpdateStatus(ctx context.Context, c StatusClient[T], obj T, mutate func(obj T) error) (T, Change, error) {
	return o.checkedUpdate(ctx, c, obj, mutate, writer[T]{update: func(obj T) (T, error) { return c.UpdateStatus(ctx, obj, metav1.UpdateOptions{}) }})
}

// Patch sends a patch of obj, judged as by Update, and remembers the
// result. Unlike the other writes it cannot tell beforehand whether the
// patch changes anything: do not call it when nothing needs to change.
// Answers of the API server are judged as the package doc says: a 409 or
// the 422 of a failed test operation is quiet while the object has changed
// since obj and the cache has not seen it yet.
func (o *Objects[T]) Patch(ctx context.Context, c Client[T], obj T, pt types.PatchType, data []byte, subresources ...string) (T, error) {
	var zero T
	name := cache.MetaObjectToName(obj)
	if err := o.check(name, obj); err != nil {
		return zero, err
	}
	tracing.MarkWrite(ctx)
	patched, err := c.Patch(ctx, name.Name, pt, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return zero, o.verdict(ctx, c, name, obj, true, err, nil)
	}
	o.remember(name, obj.GetResourceVersion(), patched)
	return patched, nil
}

// Delete deletes obj, judged as by Update, and only that incarnation of it
// (a UID precondition; another incarnation answers with a conflict, judged
// as the package doc says), with the server's default propagation. It
// sends nothing for an object that is already being deleted, and a
// NotFound counts as deleted. Until the cache no longer shows obj's
// incarnation, or shows it being deleted at a later version than obj's, Get
// reports the cache as stale.
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
	tracing.MarkWrite(ctx)
	err := c.Delete(ctx, name.Name, opts)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return o.verdict(ctx, c, name, obj, true, err, nil)
	}
	if v := obj.GetResourceVersion(); v != "" {
		o.mu.Lock()
		o.rememberLocked(name, written{uid: uid, version: v, deleted: true, at: o.cfg.clock.Now()})
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
	o.forgetLocked(name)
	delete(o.applied, appliedKey{name: name})
	delete(o.applied, appliedKey{name: name, status: true})
	delete(o.settled, name)
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
// when nothing was sent) and Created, Updated or Unchanged. An apply does
// not build on the cache, so the API server's errors are returned as they
// are: none of them is quiet.
func Apply[T Object, A any](ctx context.Context, o *Objects[T], c Applier[T, A], name cache.ObjectName, cfg A, fieldManager string) (T, Change, error) {
	return apply(ctx, o, appliedKey{name: name}, cfg, fieldManager, c.Apply)
}

// StatusApplier is the part of a generated typed client that applies
// configurations of type A to the status subresource, such as
// kube.AppsV1().Deployments(namespace) with A
// *appsv1ac.DeploymentApplyConfiguration.
type StatusApplier[T Object, A any] interface {
	ApplyStatus(ctx context.Context, cfg A, opts metav1.ApplyOptions) (T, error)
}

// ApplyStatus is Apply for the status subresource: it applies cfg (whose
// status is what the controller owns there) to the status of the existing
// object named name, skipped when it cannot change anything, behind the
// same read-your-own-writes gate. Its configuration is remembered apart
// from Apply's, so a controller may apply both to one object.
func ApplyStatus[T Object, A any](ctx context.Context, o *Objects[T], c StatusApplier[T, A], name cache.ObjectName, cfg A, fieldManager string) (T, Change, error) {
	return apply(ctx, o, appliedKey{name: name, status: true}, cfg, fieldManager, c.ApplyStatus)
}

// apply is Apply and ApplyStatus, sending with send.
func apply[T Object, A any](ctx context.Context, o *Objects[T], key appliedKey, cfg A, fieldManager string,
	send func(context.Context, A, metav1.ApplyOptions) (T, error)) (T, Change, error) {
	var zero T
	name := key.name
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
	last, ok := o.applied[key]
	o.mu.Unlock()
	if found && ok && last.hash == hash && last.version == cached.GetResourceVersion() {
		return cached, Unchanged, nil
	}
	tracing.MarkWrite(ctx)
	applied, err := send(ctx, cfg, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return zero, Unchanged, err
	}
	before := ""
	if found {
		before = cached.GetResourceVersion()
	}
	o.remember(name, before, applied)
	o.mu.Lock()
	o.applied[key] = appliedConfig{hash: hash, version: applied.GetResourceVersion()}
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
func (o *Objects[T]) checkedUpdate(ctx context.Context, get Getter[T], obj T, mutate func(T) error, w writer[T]) (T, Change, error) {
	var zero T
	name := cache.MetaObjectToName(obj)
	if err := o.check(name, obj); err != nil {
		return zero, Unchanged, err
	}
	return o.update(ctx, get, name, obj, mutate, w)
}

// writer sends an update: update sends the changed object; patch, set only
// for the object itself (not its status subresource), sends a patch for a
// trimmed one.
type writer[T Object] struct {
	update func(obj T) (T, error)
	patch  func(name string, pt types.PatchType, data []byte) (T, error)
}

// wholeWriter writes the object itself through c.
func wholeWriter[T Object](ctx context.Context, c Client[T]) writer[T] {
	return writer[T]{
		update: func(obj T) (T, error) { return c.Update(ctx, obj, metav1.UpdateOptions{}) },
		patch: func(name string, pt types.PatchType, data []byte) (T, error) {
			return c.Patch(ctx, name, pt, data, metav1.PatchOptions{})
		},
	}
}

// check returns an error matching reconcile.ErrStaleCache when obj, read by
// the caller (from the cache or a write's answer), is older than this
// Objects' last write of it. It forgets nothing: only the cache can show
// that the cache has caught up.
func (o *Objects[T]) check(name cache.ObjectName, obj T) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.judgeLocked(name, obj, true, "", false)
}

// errStale is the quiet error of a read or write of name that waits for the
// cache. cause, the answer that started the wait (if any), is named, not
// wrapped: the wait is not that answer.
func errStale(name cache.ObjectName, cause error) error {
	if cause != nil {
		return reconcile.StaleCache(fmt.Errorf("%s: the cache has not yet seen it as the API server has it since it answered %q", name, cause))
	}
	return reconcile.StaleCache(fmt.Errorf("%s: the cache is behind this controller's last write of it", name))
}

// update mutates a copy of current and sends it if it differs. whole says
// that send writes the object, not its status subresource.
func (o *Objects[T]) update(ctx context.Context, get Getter[T], name cache.ObjectName, current T, mutate func(T) error, w writer[T]) (T, Change, error) {
	var zero T
	obj, err := o.mutated(name, current, mutate)
	if err != nil {
		return zero, Unchanged, err
	}
	// The trace context annotation is never compared: obj keeps current's
	// value of it, whatever mutate did to the annotations, and a write
	// sent anyway sets it to this reconcile's.
	keepAnnotation(tracing.Annotation, current, obj)
	// Nor is the mark of a trimmed object, which exists only in the cache
	// and which mutate may have dropped with the annotations it set.
	if informer.Trimmed(current) {
		keepAnnotation(informer.TrimmedAnnotation, current, obj)
	}
	if equality.Semantic.DeepEqual(current, obj) {
		return current, Unchanged, nil
	}
	if w.patch != nil && !o.isSettled(name, current) {
		// A write of the object itself, sent anyway: it carries the trace
		// context of the reconcile (a status write cannot), unless the
		// last update of the object changed nothing the controller owns
		// and the object has not changed since: then the annotation
		// would most likely be all this write changes, a new version
		// whose event sets off the next reconcile, which would write
		// again. (Whatever this write changes: a mutate whose result
		// varies, a list in another order, or several writers' changes
		// to one object would otherwise each count as new.)
		tracing.SetAnnotation(ctx, obj)
	}
	var updated T
	switch {
	case !informer.Trimmed(current):
		tracing.MarkWrite(ctx)
		updated, err = w.update(obj)
	case w.patch == nil:
		return zero, Unchanged, fmt.Errorf("write: %s: %w: its status cannot be updated from it; use ApplyStatus or a patch", name, ErrTrimmed)
	default:
		pt, data, perr := trimmedPatch(name, current, obj)
		if perr != nil {
			return zero, Unchanged, perr
		}
		tracing.MarkWrite(ctx)
		updated, err = w.patch(name.Name, pt, data)
	}
	if err != nil {
		return zero, Unchanged, o.verdict(ctx, get, name, current, true, err, nil)
	}
	o.remember(name, current.GetResourceVersion(), updated)
	if w.patch != nil {
		if err := statusLeftOut(name, current, obj, updated); err != nil {
			return updated, Updated, err
		}
	}
	v := updated.GetResourceVersion()
	if deletedBy(updated) {
		// The update took the last finalizer off an object being
		// deleted: the API server deleted it, and answered with it at
		// the version it had.
		o.unsettle(name)
		return updated, Updated, nil
	}
	if w.patch == nil {
		if v != "" && v == current.GetResourceVersion() {
			return updated, Unchanged, nil // a webhook undid the change
		}
		return updated, Updated, nil
	}
	// What the answer is judged on, and kept as, if it settles: the whole
	// answer, or, for a trimmed object, what of it the controller could
	// see or set (its cache shows the object trimmed).
	seen := updated
	if informer.Trimmed(current) {
		if seen, err = trimmedAnswer(current, obj, updated); err != nil {
			o.unsettle(name)
			return updated, Updated, fmt.Errorf("write: %s: judging the answer to the patch of a trimmed object: %w", name, err)
		}
	}
	if v != "" && v == current.GetResourceVersion() || onlyAnnotationDiffers(current, seen) {
		// The API server found nothing the controller owns to change (a
		// webhook or defaulting undid the change): nothing was written
		// but, at most, the trace context annotation. The object's next
		// updates carry none while it stays so (also when this reconcile
		// is untraced: the next may be).
		if seen == updated {
			seen, _ = updated.DeepCopyObject().(T) // updated is the caller's
		}
		o.settle(name, seen)
		return updated, Unchanged, nil
	}
	o.unsettle(name)
	return updated, Updated, nil
}

// isSettled reports whether the last update of name changed nothing the
// controller owns and current is still as it left it.
func (o *Objects[T]) isSettled(name cache.ObjectName, current T) bool {
	o.mu.Lock()
	s, ok := o.settled[name]
	o.mu.Unlock()
	// s is never changed once kept: it is compared outside the lock.
	return ok && settledHolds(s, current)
}

// settle remembers that an update of name, answered with answer, changed
// nothing the controller owns. answer is a copy of the answer (or of what
// of it a trimmed object's cache shows) that settle may keep and change.
func (o *Objects[T]) settle(name cache.ObjectName, answer T) {
	var zero T
	if answer == zero {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	answer.SetManagedFields(nil) // never compared: not kept
	o.settled[name] = answer
	o.sweepLocked()
}

// unsettle forgets that name was settled: an update changed it.
func (o *Objects[T]) unsettle(name cache.ObjectName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.settled, name)
}

// deletedBy reports whether answer, the API server's answer to a write,
// says the write deleted the object: it was being deleted and has no
// finalizer left.
func deletedBy(answer metav1.Object) bool {
	return answer.GetDeletionTimestamp() != nil && len(answer.GetFinalizers()) == 0
}

// onlyAnnotationDiffers reports whether answer, the API server's answer to
// an update of current, differs from current in nothing but the
// tracing.Annotation and what the server sets on a write (the
// resourceVersion, the managedFields, and the generation, which a change
// of a Deployment's annotations moves on too).
func onlyAnnotationDiffers[T Object](current, answer T) bool {
	return sameBut(current, answer, false)
}

// sameBut reports whether other differs from obj in nothing but the
// tracing.Annotation, the resourceVersion, the managedFields, the
// generation, and, if status, the status.
func sameBut[T Object](obj, other T, status bool) bool {
	cp, ok := other.DeepCopyObject().(T)
	if !ok {
		return false
	}
	keepAnnotation(tracing.Annotation, obj, cp)
	cp.SetResourceVersion(obj.GetResourceVersion())
	cp.SetManagedFields(obj.GetManagedFields())
	cp.SetGeneration(obj.GetGeneration())
	if status {
		sameStatus(obj, cp)
	}
	return equality.Semantic.DeepEqual(obj, cp)
}

// sameStatus gives cp, a copy made to be compared with obj, obj's status
// (shared: cp is only compared), in a Go field Status or, for an
// unstructured object, its "status" field.
func sameStatus[T Object](obj, cp T) {
	if u, ok := any(cp).(runtime.Unstructured); ok {
		from, _ := any(obj).(runtime.Unstructured)
		content := u.UnstructuredContent()
		if st, ok := from.UnstructuredContent()["status"]; ok {
			content["status"] = st
		} else {
			delete(content, "status")
		}
		u.SetUnstructuredContent(content)
		return
	}
	if to, from := reflect.ValueOf(cp).Elem(), reflect.ValueOf(obj).Elem(); to.Kind() == reflect.Struct {
		if st := to.FieldByName("Status"); st.IsValid() && st.CanSet() {
			st.Set(from.FieldByName("Status"))
		}
	}
}

// keepAnnotation sets obj's annotation key to current's, or removes it
// where current has none, on a copy of obj's annotations (mutate may have
// set a map it shares with others).
func keepAnnotation[T Object](key string, current, obj T) {
	was, had := current.GetAnnotations()[key]
	now, has := obj.GetAnnotations()[key]
	if had == has && was == now {
		return
	}
	ann := maps.Clone(obj.GetAnnotations())
	if had {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = was
	} else {
		delete(ann, key)
		if len(ann) == 0 && current.GetAnnotations() == nil {
			// As current has them: an unstructured object tells no
			// annotations from an empty map.
			ann = nil
		}
	}
	obj.SetAnnotations(ann)
}

// statusLeftOut returns an error when sent changed the status of current
// and the API server's answer kept current's: the kind has a status
// subresource, which an update of the object does not write, so sending it
// again would never help.
func statusLeftOut[T Object](name cache.ObjectName, current, sent, answer T) error {
	was, want := statusOf(current), statusOf(sent)
	if equality.Semantic.DeepEqual(was, want) || !equality.Semantic.DeepEqual(was, statusOf(answer)) {
		return nil
	}
	return fmt.Errorf("write: %s: the update changed the status, which the API server left as it was: "+
		"the kind has a status subresource, so write the status with UpdateStatus", name)
}

// statusOf returns obj's status field as unstructured data, or nil.
func statusOf(obj runtime.Object) any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return u["status"]
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

// verdict judges answer, the API server's error for a write of name that
// was built on base (what the caller read; hadBase is false for a create
// of an object the cache did not show), as the package doc says: it
// returns an error matching reconcile.ErrStaleCache only while the cache
// has not seen the object as the server has it now, and remembers that
// version; otherwise answer as it is. refuse, if not nil, is asked about the
// object a create met: its error is returned instead.
func (o *Objects[T]) verdict(ctx context.Context, get Getter[T], name cache.ObjectName, base T, hadBase bool, answer error, refuse func(T) error) error {
	if !apierrors.IsAlreadyExists(answer) && !apierrors.IsConflict(answer) && !apierrors.IsNotFound(answer) && !apierrors.IsInvalid(answer) {
		return answer
	}
	live, err := get.Get(ctx, name.Name, metav1.GetOptions{})
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return errors.Join(answer, fmt.Errorf("write: %s: reading it back to judge the answer: %w", name, err))
	}
	if exists == hadBase && (!exists || live.GetUID() == base.GetUID() && live.GetResourceVersion() == base.GetResourceVersion()) {
		return answer // the server has what the write was built on: the answer is about the write
	}
	if exists && refuse != nil {
		if err := refuse(live); err != nil {
			return err
		}
	}
	now := o.cfg.clock.Now()
	var w written
	switch {
	case exists && live.GetResourceVersion() == "" && !apierrors.IsAlreadyExists(answer):
		return answer // a server without versions: nothing can show the cache is behind
	case exists:
		w = written{uid: live.GetUID(), version: live.GetResourceVersion(), at: now, cause: answer}
		if hadBase && base.GetUID() == live.GetUID() {
			w.before = base.GetResourceVersion()
		}
	case base.GetResourceVersion() == "":
		return answer
	default: // gone since the caller read it
		w = written{uid: base.GetUID(), version: base.GetResourceVersion(), deleted: true, at: now, cause: answer}
	}
	cached, found, storeVersion, err := o.cached(name)
	if err != nil {
		return errors.Join(answer, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if w.seenIn(cached, found, storeVersion) {
		switch {
		case exists && !found && apierrors.IsAlreadyExists(answer):
			return fmt.Errorf("write: %s exists on the API server at resourceVersion %s, and the informer's cache, which has passed that version, "+
				"does not hold it: the informer does not watch it (a label or field selector, another namespace, a shard): %w",
				name, live.GetResourceVersion(), answer)
		case exists && apierrors.IsAlreadyExists(answer):
			// The cache caught up since the create: the next reconcile
			// updates instead, so this wait is one retry long.
			return reconcile.StaleCache(fmt.Errorf("%s: the cache has just caught up with it: %w", name, answer))
		}
		return answer // the cache is not behind: the next reconcile sees what the server has
	}
	o.rememberLocked(name, w)
	o.sweepLocked()
	// The answer is wrapped, so that apierrors.IsConflict and the like see it.
	return reconcile.StaleCache(fmt.Errorf("%s: the cache has not yet seen it as the API server has it: %w", name, answer))
}

// remember records a successful write of name that replaced the version
// before (if any) and gave obj.
func (o *Objects[T]) remember(name cache.ObjectName, before string, obj T) {
	v := obj.GetResourceVersion()
	// A write that leaves an object being deleted without finalizers
	// deleted it; the API server answers with the version before that.
	gone := deletedBy(obj)
	if v == "" || v == before && !gone {
		return // nothing to compare the cache with, or nothing changed
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rememberLocked(name, written{uid: obj.GetUID(), version: v, before: before, deleted: gone, at: o.cfg.clock.Now()})
	o.sweepLocked()
}

// rememberLocked records w as the last write of name. The caller holds
// o.mu.
func (o *Objects[T]) rememberLocked(name cache.ObjectName, w written) {
	o.pending[name] = w
	o.pendingPeak = max(o.pendingPeak, len(o.pending))
}

// shrinkAt is the least number of writes pending must have held before
// forgetLocked moves it to a smaller map.
const shrinkAt = 256

// forgetLocked drops the write of name. Once pending holds a quarter of
// the most it has held, it moves to a map of its size: a Go map keeps the
// storage of its largest size, which a burst of writes (every object
// created at once) would otherwise hold as long as the process runs. The
// caller holds o.mu.
func (o *Objects[T]) forgetLocked(name cache.ObjectName) {
	delete(o.pending, name)
	if o.pendingPeak >= shrinkAt && len(o.pending) <= o.pendingPeak/4 {
		smaller := make(map[cache.ObjectName]written, len(o.pending))
		for n, w := range o.pending {
			smaller[n] = w
		}
		o.pending, o.pendingPeak = smaller, len(smaller)
	}
}

// sweepLocked keeps the maps from piling up entries of objects never read
// again: once pending has grown to twice its size after its last sweep, it
// drops the writes the cache has seen, and once applied has, the applies to
// objects the cache no longer holds. The caller holds o.mu.
func (o *Objects[T]) sweepLocked() {
	if len(o.pending) >= o.sweepAt {
		// judgeLocked may move pending to a smaller map; the loop goes on
		// over the names of the one it started with, each looked up anew.
		for name := range o.pending {
			if cached, found, storeVersion, err := o.cached(name); err == nil {
				_ = o.judgeLocked(name, cached, found, storeVersion, true)
			}
		}
		o.sweepAt = max(minSweep, 2*len(o.pending))
	}
	if len(o.settled) >= o.settledSweepAt {
		for name, s := range o.settled {
			if _, behind := o.pending[name]; behind {
				continue // the cache may not show the settled version yet
			}
			if cached, found, _, err := o.cached(name); err == nil && (!found || !settledHolds(s, cached)) {
				delete(o.settled, name)
			}
		}
		o.settledSweepAt = max(minSweep, 2*len(o.settled))
	}
	if len(o.applied) >= o.appliedSweepAt {
		for key := range o.applied {
			if _, found, _, err := o.cached(key.name); err == nil && !found {
				delete(o.applied, key)
			}
		}
		o.appliedSweepAt = max(minSweep, 2*len(o.applied))
	}
}

// cached reads name from the cache, with the resourceVersion up to which
// the store had applied events just before the read (client-go's
// LastStoreSyncResourceVersion): the object read is at least that recent,
// which the store's version read after the object would not promise, as
// the informer may apply an event in between.
func (o *Objects[T]) cached(name cache.ObjectName) (T, bool, string, error) {
	var zero T
	storeVersion := o.indexer.LastStoreSyncResourceVersion()
	item, found, err := o.indexer.GetByKey(name.String())
	if err != nil || !found {
		return zero, false, storeVersion, err
	}
	obj, ok := item.(T)
	if !ok {
		return zero, false, storeVersion, fmt.Errorf("write: the cache holds a %T for %s, not a %T", item, name, zero)
	}
	return obj, true, storeVersion, nil
}

// judgeLocked returns nil when a read of name that shows obj (if found)
// may be acted on: it has seen the last remembered version of name. Else it
// returns an error matching reconcile.ErrStaleCache, or, once the version
// has been remembered for longer than the stale limit, one that does not.
// fromCache says that obj is the cache's, read after the store had applied
// events up to storeVersion (as cached returns them; "" when obj is not the
// cache's): only then does a version seen make it forgotten.
// The caller holds o.mu.
func (o *Objects[T]) judgeLocked(name cache.ObjectName, obj T, found bool, storeVersion string, fromCache bool) error {
	w, ok := o.pending[name]
	if !ok {
		return nil
	}
	if w.seenIn(obj, found, storeVersion) {
		if fromCache {
			o.forgetLocked(name)
		}
		return nil
	}
	if waited := o.cfg.clock.Since(w.at); waited > o.cfg.staleLimit {
		err := fmt.Errorf("write: %s: the informer's cache has not shown resourceVersion %s of it %s after it was written or read back: "+
			"the informer may not watch it (a label or field selector, another namespace, a shard), or is stuck", name, w.version, waited.Round(time.Second))
		if w.cause != nil {
			return fmt.Errorf("%w: %w", err, w.cause)
		}
		return err
	}
	return errStale(name, w.cause)
}

// seenIn reports whether a cache that holds cached (if found), and whose
// store last applied an event at storeVersion ("" when unknown), has seen
// the write w.
func (w written) seenIn(cached metav1.Object, found bool, storeVersion string) bool {
	if w.version == "" && !w.deleted {
		return found && cached.GetUID() == w.uid
	}
	if w.deleted {
		// Seen once that incarnation is gone, or shown being deleted at a
		// later version than the one the delete was built on.
		if !found || cached.GetUID() != w.uid {
			return true
		}
		if cached.GetDeletionTimestamp() == nil {
			return false
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
		// AlreadyExists or a conflict, which is judged again.
		return !found || cached.GetUID() != w.uid
	}
	return c >= 0
}
