package condition_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/reconcile/condition"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

func Example() {
	ctx := context.Background()
	clientset := fake.NewClientset()
	client := clientset.StorageV1().Buckets()
	objects := write.New(externalversions.NewSharedInformerFactory(clientset, 0).Storage().V1().Buckets().TypedInformer())
	recorder := record.NewFakeRecorder(1)
	bucket := &v1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "photos"}} // as the cache has it

	ready := condition.New(objects, recorder, func(b *v1.Bucket) *[]metav1.Condition { return &b.Status.Conditions },
		condition.WithObservedGeneration(func(b *v1.Bucket) *int64 { return &b.Status.ObservedGeneration }))
	// An outage: Ready=False and one Warning event, however often it is retried.
	_, err := ready.Set(ctx, client, bucket, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "StoreUnavailable", Message: "the store does not answer",
	}, corev1.EventTypeWarning)
	_ = err // the status write's error: retry the reconcile
}
