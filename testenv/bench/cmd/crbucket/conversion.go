package main

import (
	"context"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
)

// The conversion between v1 Buckets, the hub, and v1alpha1 Buckets, a
// spoke, given to controller-runtime's hub-and-spoke converter: plain
// functions, since the API types cannot carry controller-runtime's
// conversion.Hub and conversion.Convertible methods. v1alpha1 has no
// spec.deletionPolicy: a v1alpha1 Bucket keeps it in the annotation
// storage.ctrlkit.io/deletion-policy (storagev1alpha1.AnnotationDeletionPolicy),
// so that a Bucket read and written through v1alpha1 keeps its policy.

// convertBucketToV1 fills hub, a v1 Bucket, from spoke, moving the
// annotation into spec.deletionPolicy.
func convertBucketToV1(_ context.Context, spoke *storagev1alpha1.Bucket, hub *storagev1.Bucket) error {
	spoke.ObjectMeta.DeepCopyInto(&hub.ObjectMeta)
	hub.Spec = storagev1.BucketSpec{Region: spoke.Spec.Region, Versioning: spoke.Spec.Versioning}
	if policy := hub.Annotations[storagev1alpha1.AnnotationDeletionPolicy]; policy != "" {
		hub.Spec.DeletionPolicy = storagev1.DeletionPolicy(policy)
		delete(hub.Annotations, storagev1alpha1.AnnotationDeletionPolicy)
	}
	hub.Status = storagev1.BucketStatus{ObservedGeneration: spoke.Status.ObservedGeneration, Conditions: spoke.Status.DeepCopy().Conditions}
	return nil
}

// convertBucketFromV1 fills spoke, a v1alpha1 Bucket, from hub, keeping a
// set spec.deletionPolicy in the annotation.
func convertBucketFromV1(_ context.Context, hub *storagev1.Bucket, spoke *storagev1alpha1.Bucket) error {
	hub.ObjectMeta.DeepCopyInto(&spoke.ObjectMeta)
	spoke.Spec = storagev1alpha1.BucketSpec{Region: hub.Spec.Region, Versioning: hub.Spec.Versioning}
	if hub.Spec.DeletionPolicy != "" {
		if spoke.Annotations == nil {
			spoke.Annotations = map[string]string{}
		}
		spoke.Annotations[storagev1alpha1.AnnotationDeletionPolicy] = string(hub.Spec.DeletionPolicy)
	}
	spoke.Status = storagev1alpha1.BucketStatus{ObservedGeneration: hub.Status.ObservedGeneration, Conditions: hub.Status.DeepCopy().Conditions}
	return nil
}
