package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

// BucketReconciler keeps the storage service's buckets as the Buckets
// declare them.
type BucketReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Store    *store.Client
	Resync   time.Duration // how often each Bucket is checked again
}

// SetupWithManager registers the controller: the Buckets' own changes and
// the storage service's change notifications. The periodic check is the
// RequeueAfter of Reconcile.
func (r *BucketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	changes := make(chan event.TypedGenericEvent[[]string])
	// Forward the service's notifications while this replica leads.
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for names := range r.Store.Changes(ctx) {
			select {
			case changes <- event.TypedGenericEvent[[]string]{Object: names}:
			case <-ctx.Done():
			}
		}
		return nil
	}))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&storagev1.Bucket{}).
		WatchesRawSource(source.Channel(changes, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, names []string) []reconcile.Request {
				reqs := make([]reconcile.Request, len(names))
				for i, name := range names {
					reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
				}
				return reqs
			}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile holds the finalizer on a Bucket, makes the storage service hold
// its bucket as specified, owned by the Bucket's UID, and deletes the
// bucket there before the Bucket goes, unless its deletion policy is
// Retain. A bucket of the name that the Bucket does not own is refused, and
// left there.
func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var bucket storagev1.Bucket
	if err := r.Get(ctx, req.NamespacedName, &bucket); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner := string(bucket.UID)
	// A merge patch replaces the whole list of finalizers: the optimistic
	// lock keeps it from dropping one that another controller just added.
	patch := client.MergeFromWithOptions(bucket.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if !bucket.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&bucket, storagev1.Finalizer) {
			return ctrl.Result{}, nil
		}
		if bucket.Spec.DeletionPolicy == storagev1.DeletionPolicyRetain {
			ctrl.LoggerFrom(ctx).Info("Leaving the bucket in the storage service: the Bucket's deletion policy is Retain", "bucket", bucket.Name)
		} else if err := r.Store.DeleteAs(ctx, owner, bucket.Name); errors.Is(err, store.ErrNotOwner) {
			ctrl.LoggerFrom(ctx).Info("Leaving the bucket in the storage service: this Bucket did not create it", "bucket", bucket.Name)
		} else if err != nil {
			return ctrl.Result{}, r.unavailable(ctx, &bucket, fmt.Errorf("deleting bucket %s: %w", bucket.Name, err))
		}
		controllerutil.RemoveFinalizer(&bucket, storagev1.Finalizer)
		return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, &bucket, patch))
	}
	if controllerutil.AddFinalizer(&bucket, storagev1.Finalizer) {
		if err := r.Patch(ctx, &bucket, patch); err != nil {
			return ctrl.Result{}, err
		}
	}

	want := store.Spec{Region: bucket.Spec.Region, Versioning: bucket.Spec.Versioning}
	got, found, err := r.Store.Get(ctx, bucket.Name)
	foreign := err == nil && found && got.Owner != owner
	if err == nil && !foreign && (!found || got.Spec != want) {
		_, err = r.Store.PutAs(ctx, owner, bucket.Name, want)
	}
	switch {
	case foreign || errors.Is(err, store.ErrNotOwner): // the latter: created by someone else since the Get
		err = r.refuse(ctx, &bucket)
	case err != nil:
		return ctrl.Result{}, r.unavailable(ctx, &bucket, fmt.Errorf("writing bucket %s: %w", bucket.Name, err))
	default:
		err = r.setReady(ctx, &bucket, metav1.ConditionTrue, storagev1.ReasonSynced, "The storage service holds the bucket as specified")
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	// The periodic check, for notifications lost while the service or the
	// operator was down. controller-runtime's documentation (of
	// cache.Options.SyncPeriod) recommends this over a shorter SyncPeriod,
	// which would replay every cached object of every controller, to poll
	// what cannot be watched. At low priority, behind the notifications;
	// the initial list checks every Bucket at start.
	return ctrl.Result{RequeueAfter: r.Resync, Priority: ptr.To(handler.LowPriority)}, nil
}

// refuse reports a bucket of the Bucket's name that the Bucket does not
// own, which is left alone: a Warning, Ready=False and a terminal error,
// logged once, when the condition does not say so yet; nil after that,
// so that the periodic checks are quiet.
func (r *BucketReconciler) refuse(ctx context.Context, bucket *storagev1.Bucket) error {
	reason := storagev1.ReasonBucketExists
	if c := meta.FindStatusCondition(bucket.Status.Conditions, storagev1.ConditionReady); c != nil && c.Reason == reason && c.ObservedGeneration == bucket.Generation {
		return nil
	}
	msg := fmt.Sprintf("The storage service holds a bucket %s that this Bucket did not create: the operator leaves it alone (delete it there, or name the Bucket otherwise)", bucket.Name)
	if err := r.report(ctx, bucket, reason, msg); err != nil {
		return err // retried: the refusal must reach the status
	}
	return reconcile.TerminalError(errors.New(msg))
}

// unavailable reports a failure of the storage service and returns err, to
// be retried with backoff, joined with a failed status write.
func (r *BucketReconciler) unavailable(ctx context.Context, bucket *storagev1.Bucket, err error) error {
	return errors.Join(err, r.report(ctx, bucket, storagev1.ReasonStoreUnavailable, err.Error()))
}

// report records a problem: a Warning event when the Ready condition does
// not have reason yet, and Ready=False. It returns the status write's
// error.
func (r *BucketReconciler) report(ctx context.Context, bucket *storagev1.Bucket, reason, msg string) error {
	if c := meta.FindStatusCondition(bucket.Status.Conditions, storagev1.ConditionReady); c == nil || c.Reason != reason {
		r.Recorder.Eventf(bucket, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", msg)
	}
	return r.setReady(ctx, bucket, metav1.ConditionFalse, reason, msg)
}

// setReady writes the Ready condition, if it changed.
func (r *BucketReconciler) setReady(ctx context.Context, bucket *storagev1.Bucket, status metav1.ConditionStatus, reason, msg string) error {
	changed := meta.SetStatusCondition(&bucket.Status.Conditions, metav1.Condition{
		Type: storagev1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: bucket.Generation,
	})
	if !changed && bucket.Status.ObservedGeneration == bucket.Generation {
		return nil
	}
	bucket.Status.ObservedGeneration = bucket.Generation
	return r.Status().Update(ctx, bucket)
}
