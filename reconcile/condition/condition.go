// Package condition sets status conditions of an object the way users
// read conditions: with the generation they were observed at and the time
// of their last transition, with the event that goes with a change of a
// condition's status or reason recorded once per transition (not once
// per retry), after the status write that shows it succeeded, and with a
// status write only when something changed, behind the read-your-own-writes
// gate of package reconcile/write.
//
// Set writes one condition:
//
//	ready := condition.New(objects, recorder, func(b *v1.Bucket) *[]metav1.Condition { return &b.Status.Conditions },
//		condition.WithObservedGeneration(func(b *v1.Bucket) *int64 { return &b.Status.ObservedGeneration }))
//	// An outage: Ready=False and one Warning event, however often it is retried.
//	_, err := ready.Set(ctx, client, bucket, metav1.Condition{
//		Type: "Ready", Status: metav1.ConditionFalse, Reason: "StoreUnavailable", Message: "the store does not answer",
//	}, corev1.EventTypeWarning)
//
// Update writes the conditions together with the rest of the status
// (counts, per-member entries) in one status write:
//
//	_, err := status.Update(ctx, clientset.SamplecontrollerV1alpha1().Foos(foo.Namespace), foo, func(f *samplev1alpha1.Foo, set condition.SetFunc) error {
//		f.Status.AvailableReplicas = available
//		msg := fmt.Sprintf("%d of %d replicas available", available, want)
//		if available < want {
//			set(metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentNotReady", Message: msg}, corev1.EventTypeWarning)
//		} else {
//			set(metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DeploymentReady", Message: msg}, corev1.EventTypeNormal)
//		}
//		return nil
//	})
//
// A Writer writes with an update (PUT) of the status subresource, not a
// patch: the controller's role needs update on the kind's status
// (+kubebuilder:rbac:groups=storage.ctrlkit.io,resources=buckets/status,verbs=update),
// get on the kind (a conflict's answer is judged on the object read back),
// and create and patch on events for the events it records. The strict
// fakes of package reconcile/reconciletest check no role, so a missing
// verb shows only in a cluster, as a Forbidden error.
package condition

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// Writer sets conditions of objects of type T. It is safe for concurrent
// use by the workers of one controller. It writes through
// write.Objects.UpdateStatus, which needs update on the status
// subresource (<plural>/status) in the controller's role.
type Writer[T write.Object] struct {
	objects    *write.Objects[T]
	recorder   record.EventRecorder
	conditions func(obj T) *[]metav1.Condition
	observed   func(obj T) *int64
	clock      clock.PassiveClock
}

// Option configures a Writer.
type Option[T write.Object] func(*Writer[T])

// WithObservedGeneration makes Set and Update also bring the status's own
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
// when no condition is set with an event type.
func New[T write.Object](objects *write.Objects[T], recorder record.EventRecorder, conditions func(obj T) *[]metav1.Condition, opts ...Option[T]) *Writer[T] {
	if objects == nil || conditions == nil {
		panic("condition.New: objects and conditions are required")
	}
	w := &Writer[T]{objects: objects, recorder: recorder, conditions: conditions, clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(w)
	}
	if w.clock == nil {
		panic("condition.New: WithClock of a nil clock")
	}
	return w
}

// Set writes obj's status, as read from the cache or returned by a write,
// with cond (its Type, Status, Reason and Message) set as SetFunc sets it,
// and records the event of eventType (none if empty) when the condition's
// status or reason changes: it is Update with a mutate that sets cond
// alone. Use Update to write the status's other fields in the same write.
func (w *Writer[T]) Set(ctx context.Context, client write.StatusClient[T], obj T, cond metav1.Condition, eventType string) (T, error) {
	return w.Update(ctx, client, obj, func(_ T, set SetFunc) error {
		set(cond, eventType)
		return nil
	})
}

// SetFunc sets a condition on the object that Update passes with it, in
// memory: cond's Type, Status, Reason and Message; its ObservedGeneration
// becomes the object's generation, and its LastTransitionTime cond's (if
// set) or the Writer's clock's time when its status changes (else the
// time it has is kept), as meta.SetStatusCondition does. eventType
// (corev1.EventTypeNormal or corev1.EventTypeWarning, or empty for none)
// is the type of the event Update records when the write shows the
// condition with another status or reason than obj had: its reason and
// message are cond's. Setting a condition type twice keeps the last.
type SetFunc func(cond metav1.Condition, eventType string)

// Update writes the status of obj, as read from the cache or returned by a
// write, in one update of the status subresource through client, on obj's
// resourceVersion, and returns the object as the API server has it then
// (obj itself when nothing was sent):
//
//   - mutate changes a copy of obj: the status's own fields (counts,
//     per-member entries) directly, its conditions through set (see
//     SetFunc); conditions it does not set stay as they are. With
//     WithObservedGeneration the status's observedGeneration becomes the
//     object's generation too;
//   - the status is written (write.Objects.UpdateStatus) only when that
//     changed something; an error of mutate is returned as it is, and
//     nothing is written;
//   - once the write succeeded, and only then, an event is recorded about
//     the object for each condition set with an event type whose status or
//     reason the write changed: one event per transition, none for a
//     retry that finds the condition already set, none for a write that
//     failed (its retry records it once it succeeds), and none for a write
//     the API server answered with the object it already had (someone else
//     made that transition). A write stored by the API server whose answer
//     was lost records none either: its retry finds the condition set.
//
// The errors are those of write.Objects.UpdateStatus: one matching
// reconcile.ErrStaleCache while the cache has not seen the controller's
// last write of the object, else the API server's.
func (w *Writer[T]) Update(ctx context.Context, client write.StatusClient[T], obj T, mutate func(obj T, set SetFunc) error) (T, error) {
	var (
		before  []metav1.Condition // the copy's conditions before mutate
		pending []announcement     // one per condition type set with an event type
	)
	updated, change, err := w.objects.UpdateStatus(ctx, client, obj, func(obj T) error {
		// Called on an object the gate let through, before the write.
		before = slices.Clone(*w.conditions(obj))
		pending = pending[:0]
		set := func(cond metav1.Condition, eventType string) {
			pending = slices.DeleteFunc(pending, func(a announcement) bool { return a.condType == cond.Type })
			if eventType != "" {
				pending = append(pending, announcement{condType: cond.Type, eventType: eventType})
			}
			cond.ObservedGeneration = obj.GetGeneration()
			if cond.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = metav1.NewTime(w.clock.Now())
			}
			meta.SetStatusCondition(w.conditions(obj), cond)
		}
		if err := mutate(obj, set); err != nil {
			return err
		}
		if w.observed != nil {
			*w.observed(obj) = obj.GetGeneration()
		}
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	if change == write.Unchanged {
		return updated, nil
	}
	for _, a := range pending {
		was := meta.FindStatusCondition(before, a.condType)
		now := meta.FindStatusCondition(*w.conditions(updated), a.condType)
		if now != nil && (was == nil || was.Status != now.Status || was.Reason != now.Reason) {
			w.recorder.Event(updated, a.eventType, now.Reason, now.Message)
		}
	}
	return updated, nil
}

// announcement is a condition set with the type of the event of its
// transition.
type announcement struct {
	condType, eventType string
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
