package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer is the finalizer the bucket operator keeps on every Bucket until
// the bucket it declares is gone from the storage service.
const Finalizer = "storage.ctrlkit.io/bucket"

// ConditionReady is the type of the condition that summarises a Bucket:
// True when the storage service holds the bucket as the spec asks.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	// ReasonSynced (Ready=True): the storage service holds the bucket as
	// the spec asks.
	ReasonSynced = "Synced"
	// ReasonStoreUnavailable (Ready=False): the storage service could not
	// be reached or failed; the operator retries with backoff. Also the
	// reason of the Warning event.
	ReasonStoreUnavailable = "StoreUnavailable"
	// ReasonBucketExists (Ready=False): the storage service holds a bucket
	// of the Bucket's name that the operator did not create for this
	// Bucket (its owner there is not the Bucket's UID). The operator leaves
	// it alone: it does not write it, nor delete it when the Bucket goes;
	// once it is gone from the service, the Bucket gets a bucket of its
	// own. Also the reason of the Warning event.
	ReasonBucketExists = "BucketExists"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=buckets,singular=bucket,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name=Region,type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name=Deletion,type=string,JSONPath=`.spec.deletionPolicy`
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Reason,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name is the bucket's name in the storage service: a DNS label (at most 63 lowercase letters, digits and '-')"

// Bucket declares a bucket of the same name in the storage service. The
// operator creates it there, owned by the Bucket's UID, keeps it as the spec
// says (restoring it if it is changed or removed behind the operator's back)
// and deletes it before the Bucket is deleted, unless its DeletionPolicy
// says to keep it. A bucket of that name that the operator did not create
// for this Bucket is never written or deleted (see ReasonBucketExists).
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
	// Region is where the bucket lives, such as "eu-west-1". The
	// operator's defaulting webhook sets its --default-region when it is
	// empty; its validating webhook refuses a Bucket without one, or with
	// one that is not among its --regions.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`
	// Versioning keeps older versions of the bucket's objects.
	// +optional
	Versioning bool `json:"versioning,omitempty"`
	// DeletionPolicy says what becomes of the bucket when the Bucket is
	// deleted: DeletionPolicyDelete, which the defaulting webhook sets
	// when it is empty, or DeletionPolicyRetain.
	// +optional
	// +kubebuilder:validation:Enum=Delete;Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// DeletionPolicy says what becomes of a Bucket's bucket when the Bucket is
// deleted.
type DeletionPolicy string

// The deletion policies.
const (
	// DeletionPolicyDelete: the operator deletes the bucket from the
	// storage service before the Bucket goes.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain: the bucket stays in the storage service, still
	// owned by the deleted Bucket's UID, so no other Bucket takes it over.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// BucketStatus is the observed state of a Bucket.
type BucketStatus struct {
	// ObservedGeneration is the metadata.generation the operator last
	// acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the latest observations, keyed by type; the operator
	// maintains ConditionReady.
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
