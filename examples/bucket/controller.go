package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned"
	bucketclient "github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/typed/storage/v1"
	bucketinformers "github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/condition"
	"github.com/ctrlkit/ctrlkit/reconcile/finalizer"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// The permissions the operator needs, generated into deploy/role.yaml
// (make generate): Buckets are patched for the finalizer, their status
// updated, and events recorded about them.
//
// +kubebuilder:rbac:groups=storage.ctrlkit.io,resources=buckets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=storage.ctrlkit.io,resources=buckets/status,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// buckets keeps the storage service's buckets as the Buckets declare them.
type buckets struct {
	store   *store.Client
	client  bucketclient.BucketInterface
	objects *write.Objects[*storagev1.Bucket]
	ready   *condition.Writer[*storagev1.Bucket]
}

// newController wires the Bucket controller: the Buckets' own changes, the
// storage service's change notifications, and a check of every Bucket each
// resync period at low priority, so that a bucket changed or removed behind
// the operator's back is restored.
func newController(ctx context.Context, st *store.Client, client versioned.Interface, bucketInformer bucketinformers.TypedBucketInformer,
	recorder record.EventRecorder, resync time.Duration, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	objects := write.New(bucketInformer.TypedInformer())
	b := &buckets{store: st, client: client.StorageV1().Buckets(), objects: objects,
		ready: condition.New(objects, recorder, func(b *storagev1.Bucket) *[]metav1.Condition { return &b.Status.Conditions },
			condition.WithObservedGeneration(func(b *storagev1.Bucket) *int64 { return &b.Status.ObservedGeneration }))}
	r := finalizer.Reconciler(storagev1.Finalizer, b.objects, finalizer.ClusterScoped(b.client), finalizer.Funcs[*storagev1.Bucket]{
		Apply: b.apply, Cleanup: b.cleanup,
	})
	ctrl, err := queue.New("buckets", r, opts...)
	if err != nil {
		return nil, err
	}
	return ctrl, ctrl.Watch(queue.On(bucketInformer.TypedInformer(), informer.EnqueueHandler[*storagev1.Bucket](ctrl)),
		queue.Channel(ctrl, st.Changes(ctx), informer.NamesIn("")),
		queue.Periodic(ctrl, resync, informer.AllKeys(bucketInformer.TypedInformer()), queue.AtStart(), queue.LowPriority(), queue.Jitter(0.1)))
}

// apply makes the storage service hold the bucket as bucket's spec asks,
// owned by bucket's UID, and says so in the Ready condition. A bucket of
// the name that bucket does not own is refused.
func (b *buckets) apply(ctx context.Context, bucket *storagev1.Bucket) (reconcile.Result, error) {
	want, owner := store.Spec{Region: bucket.Spec.Region, Versioning: bucket.Spec.Versioning}, string(bucket.UID)
	got, found, err := b.store.Get(ctx, bucket.Name)
	if err == nil && found && got.Owner != owner {
		return b.refuse(ctx, bucket)
	}
	if err == nil && (!found || got.Spec != want) { // missing, or changed behind the operator's back
		_, err = b.store.PutAs(ctx, owner, bucket.Name, want)
	}
	if errors.Is(err, store.ErrNotOwner) { // created by someone else since the Get
		return b.refuse(ctx, bucket)
	}
	if err != nil { // the Get's or the Put's
		return reconcile.Result{}, b.unavailable(ctx, bucket, fmt.Errorf("writing bucket %s: %w", bucket.Name, err))
	}
	return reconcile.Result{}, b.setReady(ctx, bucket, metav1.ConditionTrue, storagev1.ReasonSynced, "The storage service holds the bucket as specified", "")
}

// cleanup deletes bucket's own bucket from the storage service; the
// finalizer goes once it succeeded. A bucket of the name that bucket does
// not own is left there, and so is its own under DeletionPolicyRetain.
func (b *buckets) cleanup(ctx context.Context, bucket *storagev1.Bucket) (reconcile.Result, error) {
	if bucket.Spec.DeletionPolicy == storagev1.DeletionPolicyRetain {
		klog.FromContext(ctx).Info("Leaving the bucket in the storage service: the Bucket's deletion policy is Retain", "bucket", bucket.Name)
		return reconcile.Result{}, nil
	}
	err := b.store.DeleteAs(ctx, string(bucket.UID), bucket.Name)
	if errors.Is(err, store.ErrNotOwner) {
		klog.FromContext(ctx).Info("Leaving the bucket in the storage service: this Bucket did not create it", "bucket", bucket.Name)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, b.unavailable(ctx, bucket, fmt.Errorf("deleting bucket %s: %w", bucket.Name, err))
	}
	return reconcile.Result{}, nil
}

// refuse reports a bucket of bucket's name in the storage service that
// bucket does not own, which the operator leaves alone. The report (a
// Warning, Ready=False) and a terminal error come when the condition does
// not say so yet; after that the Bucket's periodic checks are quiet. A
// change of the Bucket, or of that bucket (its deletion above all), wakes
// it up.
func (b *buckets) refuse(ctx context.Context, bucket *storagev1.Bucket) (reconcile.Result, error) {
	refused := metav1.Condition{Type: storagev1.ConditionReady, Status: metav1.ConditionFalse, Reason: storagev1.ReasonBucketExists}
	if b.ready.Current(bucket, refused) {
		return reconcile.Result{}, nil
	}
	msg := fmt.Sprintf("The storage service holds a bucket %s that this Bucket did not create: the operator leaves it alone (delete it there, or name the Bucket otherwise)", bucket.Name)
	if err := b.setReady(ctx, bucket, refused.Status, refused.Reason, msg, corev1.EventTypeWarning); err != nil {
		return reconcile.Result{}, err // retried: the refusal must reach the status
	}
	return reconcile.Result{}, &reconcile.TerminalError{Err: errors.New(msg), Generation: bucket.Generation}
}

// unavailable reports a failure of the storage service, whether the apply
// or the cleanup met it (a Warning once per outage, Ready=False), and
// returns err, to be retried with backoff, joined with a failed status
// write.
func (b *buckets) unavailable(ctx context.Context, bucket *storagev1.Bucket, err error) error {
	return errors.Join(err, b.setReady(ctx, bucket, metav1.ConditionFalse, storagev1.ReasonStoreUnavailable, err.Error(), corev1.EventTypeWarning))
}

// setReady sets the Ready condition, with an event of eventType (none if
// empty) when its reason changes.
func (b *buckets) setReady(ctx context.Context, bucket *storagev1.Bucket, status metav1.ConditionStatus, reason, msg, eventType string) error {
	_, err := b.ready.Set(ctx, b.client, bucket, metav1.Condition{Type: storagev1.ConditionReady, Status: status, Reason: reason, Message: msg}, eventType)
	return err
}
