package condition_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
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

// A status with fields of its own beside its conditions: the replicas
// available and the Ready condition go in one status write, and the
// Warning of a transition is recorded once that write succeeded.
func ExampleWriter_Update() {
	ctx := context.Background()
	clientset := foofake.NewClientset()
	objects := write.New(fooinformers.NewSharedInformerFactory(clientset, 0).Samplecontroller().V1alpha1().Foos().TypedInformer())
	recorder := record.NewFakeRecorder(1)
	foo := &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}} // as the cache has it
	available, want := int32(1), int32(3)                                                   // what the reconcile found

	status := condition.New(objects, recorder, func(f *samplev1alpha1.Foo) *[]metav1.Condition { return &f.Status.Conditions },
		condition.WithObservedGeneration(func(f *samplev1alpha1.Foo) *int64 { return &f.Status.ObservedGeneration }))
	_, err := status.Update(ctx, clientset.SamplecontrollerV1alpha1().Foos(foo.Namespace), foo, func(f *samplev1alpha1.Foo, set condition.SetFunc) error {
		f.Status.AvailableReplicas = available
		msg := fmt.Sprintf("%d of %d replicas available", available, want)
		if available < want {
			set(metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DeploymentNotReady", Message: msg}, corev1.EventTypeWarning)
		} else {
			set(metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DeploymentReady", Message: msg}, corev1.EventTypeNormal)
		}
		return nil
	})
	_ = err // the status write's error: retry the reconcile
}
