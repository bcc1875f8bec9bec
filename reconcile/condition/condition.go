// Package condition sets a status condition of an object the way users
// read conditions: with the generation it was observed at and the time of
// its last transition, with the event that goes with a change of its
// reason recorded once per transition (not once per retry), and with a
// status write only when something changed, behind the read-your-own-writes
// gate of package reconcile/write.
//
//	ready := condition.New(objects, recorder, func(b *v1.Bucket) *[]metav1.Condition { return &b.Status.Conditions },
//		condition.WithObservedGeneration(func(b *v1.Bucket) *int64 { return &b.Status.ObservedGeneration }))
//	// An outage: Ready=False and one Warning event, however often it is retried.
//	_, err := ready.Set(ctx, client, bucket, metav1.Condition{
//		Type: "Ready", Status: metav1.ConditionFalse, Reason: "StoreUnavailable", Message: "the store does not answer",
//	}, corev1.EventTypeWarning)
package condition

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// Writer sets conditions of objects of type T. It is safe for concurrent
// use by the workers of one controller.
type Writer[T write.Object] struct {
	objects    *write.Objects[T]
	recorder   record.EventRecorder
	conditions func(obj T) *[]metav1.Condition
	observed   func(obj T) *int64
	clock      clock.PassiveClock

	// announced holds the transitions whose event was recorded but whose
	// status write has not succeeded yet, so that its retry does not
	// record the event again.
	mu        sync.Mutex
	announced map[transition]bool
}

// transition is a condition of one object reaching a status and reason.
type transition struct {
	uid                   types.UID
	condType, status, why string
}

// Option configures a Writer.
type Option[T write.Object] func(*Writer[T])

// WithObservedGeneration makes Set also bring the status's own
// observedGeneration field, which observed points to in a given object, to
// the object's generation.
func WithObservedGeneration[T write.Object](observed func(obj T) *int64) Option[T] {
	return func(w *Writer[T]) { w.observed = observed }
}

// WithClock sets the clock of the conditions' LastTransitionTime. A test
// gives it the fake clock the controller waits by (queue.WithClock) and
// the strict fakes stamp objects by (reconciletest.StrictAPI.WithClock).
// Default the real clock.
func WithClock[T write.Object](clk clock.PassiveClock) Option[T] {
	return func(w *Writer[T]) { w.clock = clk }
}

// New returns a Writer that writes status through objects (whose cache is
// the controller's view of the objects), records events with recorder, and
// finds the conditions of an object with conditions, which returns a
// pointer to its status's list (status.conditions). recorder may be nil
// when no Set asks for an event.
func New[T write.Object](objects *write.Objects[T], recorder record.EventRecorder, conditions func(obj T) *[]metav1.Condition, opts ...Option[T]) *Writer[T] {
	if objects == nil || conditions == nil {
		panic("condition.New: objects and conditions are required")
	}
	w := &Writer[T]{objects: objects, recorder: recorder, conditions: conditions, clock: clock.RealClock{}, announced: map[transition]bool{}}
	for _, opt := range opts {
		opt(w)
	}
	if w.clock == nil {
		panic("condition.New: WithClock of a nil clock")
	}
	return w
}

// Set sets cond (its Type, Status, Reason and Message) on obj, as read from
// the cache or returned by a write, and returns the object as the API
// server has it then (obj itself when nothing was sent):
//
//   - the condition's ObservedGeneration becomes obj's generation, and its
//     LastTransitionTime cond's (if set) or the Writer's clock's time when
//     its status changes (else it is kept), as meta.SetStatusCondition
//     does; with
//     WithObservedGeneration the status's observedGeneration too;
//   - the status is written (an update of the status subresource through
//     client, on obj's resourceVersion) only when that changed something;
//   - when eventType is not empty (corev1.EventTypeNormal or
//     corev1.EventTypeWarning) and the condition's status or reason
//     changes, an event of that type with cond's reason and message is
//     recorded about the object, just before the status write, so that
//     whoever sees the new status finds the event too: one event per
//     transition, none for a retry that finds the condition already set,
//     and none for the retry of a write that failed.
//
// The errors are those of write.Objects.UpdateStatus: one matching
// reconcile.ErrStaleCache while the cache has not seen the controller's
// last write of the object, else the API server's.
func (w *Writer[T]) Set(ctx context.Context, client write.StatusClient[T], obj T, cond metav1.Condition, eventType string) (T, error) {
	to := transition{uid: obj.GetUID(), condType: cond.Type, status: string(cond.Status), why: cond.Reason}
	updated, _, err := w.objects.UpdateStatus(ctx, client, obj, func(obj T) error {
		// Called on an object the gate let through, before the write.
		before := meta.FindStatusCondition(*w.conditions(obj), cond.Type)
		if eventType != "" && (before == nil || before.Status != cond.Status || before.Reason != cond.Reason) && w.announce(to) {
			w.recorder.Event(obj, eventType, cond.Reason, cond.Message)
		}
		cond.ObservedGeneration = obj.GetGeneration()
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = metav1.NewTime(w.clock.Now())
		}
		meta.SetStatusCondition(w.conditions(obj), cond)
		if w.observed != nil {
			*w.observed(obj) = obj.GetGeneration()
		}
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	w.mu.Lock()
	delete(w.announced, to) // written: the status itself says it now
	w.mu.Unlock()
	return updated, nil
}

// announce reports whether the event of to is still to be recorded, and
// marks it recorded. Marks of the object's condition for other statuses
// or reasons go: a transition away and back is a transition again.
func (w *Writer[T]) announce(to transition) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.announced[to] {
		return false
	}
	for t := range w.announced {
		if t.uid == to.uid && t.condType == to.condType {
			delete(w.announced, t)
		}
	}
	w.announced[to] = true
	return true
}

// Get returns the condition of type conditionType of obj, or nil.
func (w *Writer[T]) Get(obj T, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(*w.conditions(obj), conditionType)
}

// Current reports whether obj's condition of cond's type has cond's status
// and reason and was observed at obj's current generation: what a
// controller checks to stay quiet about a state it already reported.
func (w *Writer[T]) Current(obj T, cond metav1.Condition) bool {
	c := w.Get(obj, cond.Type)
	return c != nil && c.Status == cond.Status && c.Reason == cond.Reason && c.ObservedGeneration == obj.GetGeneration()
}
