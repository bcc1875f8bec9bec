package v1alpha1

import (
	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
)

// AnnotationDeletionPolicy holds, on a v1alpha1 Bucket, the v1 field this
// version does not have: spec.deletionPolicy. Conversion to v1 moves a
// non-empty value into the field, conversion from v1 puts a set field
// back, so that a Bucket read and written through v1alpha1 keeps its
// policy; a v1alpha1 client may set it too.
const AnnotationDeletionPolicy = "storage.ctrlkit.io/deletion-policy"

// ConvertToV1 fills dst, a v1 Bucket, from src, as the operator's
// conversion webhook does.
func ConvertToV1(src *Bucket, dst *storagev1.Bucket) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec = storagev1.BucketSpec{Region: src.Spec.Region, Versioning: src.Spec.Versioning}
	if policy := dst.Annotations[AnnotationDeletionPolicy]; policy != "" {
		dst.Spec.DeletionPolicy = storagev1.DeletionPolicy(policy)
		delete(dst.Annotations, AnnotationDeletionPolicy)
	}
	dst.Status = storagev1.BucketStatus{ObservedGeneration: src.Status.ObservedGeneration, Conditions: src.Status.DeepCopy().Conditions}
	return nil
}

// ConvertFromV1 fills dst, a v1alpha1 Bucket, from src, as the operator's
// conversion webhook does.
func ConvertFromV1(src *storagev1.Bucket, dst *Bucket) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec = BucketSpec{Region: src.Spec.Region, Versioning: src.Spec.Versioning}
	if src.Spec.DeletionPolicy != "" {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[AnnotationDeletionPolicy] = string(src.Spec.DeletionPolicy)
	}
	dst.Status = BucketStatus{ObservedGeneration: src.Status.ObservedGeneration, Conditions: src.Status.DeepCopy().Conditions}
	return nil
}
