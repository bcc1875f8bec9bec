package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=buckets,singular=bucket,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="storage.ctrlkit.io/v1alpha1 Bucket is deprecated; use storage.ctrlkit.io/v1"
// +kubebuilder:printcolumn:name=Region,type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Reason,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name is the bucket's name in the storage service: a DNS label (at most 63 lowercase letters, digits and '-')"

// Bucket declares a bucket of the same name in the storage service. The
// operator creates it there, owned by the Bucket's UID, keeps it as the spec
// says (restoring it if it is changed or removed behind the operator's back)
// and deletes it before the Bucket is deleted. A bucket of that name that
// the operator did not create for this Bucket is never written or deleted
// (see ReasonBucketExists in package v1). Version v1 adds
// spec.deletionPolicy, which this version keeps in the annotation
// AnnotationDeletionPolicy.
type Bucket struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the bucket as it should be.
	// +required
	Spec BucketSpec `json:"spec"`
	// Status is what the operator last observed, written through the
	// status subresource.
	// +optional
	Status BucketStatus `json:"status,omitempty"`
}

// BucketSpec is the desired state of a bucket.
type BucketSpec struct {
	// Region is where the bucket lives, such as "eu-west-1".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region"`
	// Versioning keeps older versions of the bucket's objects.
	// +optional
	Versioning bool `json:"versioning,omitempty"`
}

// BucketStatus is the observed state of a Bucket.
type BucketStatus struct {
	// ObservedGeneration is the metadata.generation the operator last
	// acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the latest observations, keyed by type; the operator
	// maintains the Ready condition (see package v1).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// BucketList is a list of Buckets.
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Buckets in the list.
	Items []Bucket `json:"items"`
}
