package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1"
)

// Finalizer is the finalizer the operator keeps on every ConfigSet until its
// ConfigMap is gone from every member that had it.
const Finalizer = "fleet.ctrlkit.io/configset"

// LabelManagedBy marks the ConfigMaps of the members that the operator
// owns: it writes and deletes only those, whose value is ManagedBy.
const (
	LabelManagedBy = "fleet.ctrlkit.io/managed-by"
	ManagedBy      = "configset-operator"
)

// ConditionReady is the type of the condition that summarises a ConfigSet:
// True when every member it goes to holds its ConfigMap as the spec says.
// Its reasons are those of package queue/multicluster's Results.Status
// (AllMembersReady, MembersUnreachable, MembersNotReady).
const ConditionReady = "Ready"

// Reasons of a member's entry in the status, besides those of package
// queue/multicluster (Unreachable, NotHeld, Pending).
const (
	// ReasonApplied: the member holds the ConfigMap as the spec says.
	ReasonApplied = "Applied"
	// ReasonConflict: the member holds a ConfigMap of the ConfigSet's
	// name that the operator does not own (no LabelManagedBy); it is
	// left alone.
	ReasonConflict = "Conflict"
	// ReasonFailed: writing the ConfigMap to the member failed; retried.
	ReasonFailed = "ApplyFailed"
	// ReasonRemoving: spec.members no longer names the member, and its
	// ConfigMap is not removed yet (the member does not answer, or the
	// removal failed); retried, and a deletion of the ConfigSet waits
	// for it.
	ReasonRemoving = "Removing"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=configsets,singular=configset,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Members,type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name=Of,type=integer,JSONPath=`.status.totalMembers`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`

// ConfigSet declares a ConfigMap of the same namespace and name in every
// member cluster of a fleet (or those Spec.Members names). The operator
// creates it there, labelled LabelManagedBy, keeps its data as the spec
// says, and deletes it from every member before the ConfigSet is deleted.
// A ConfigMap of that name without the label is never written or deleted:
// its member reports ReasonConflict.
type ConfigSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is what the members should hold.
	// +required
	Spec ConfigSetSpec `json:"spec"`
	// Status is where each member stands, written through the status
	// subresource.
	// +optional
	Status ConfigSetStatus `json:"status,omitempty"`
}

// ConfigSetSpec is the ConfigMap to hold, and where.
type ConfigSetSpec struct {
	// Data is the data of the ConfigMap in each member.
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// Members names the members that get the ConfigMap; empty: every
	// member of the fleet.
	// +optional
	// +listType=set
	Members []string `json:"members,omitempty"`
}

// ConfigSetStatus is where the ConfigSet stands in the fleet.
type ConfigSetStatus struct {
	// ObservedGeneration is the generation the status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Members has one entry per member the ConfigSet goes to, and one,
	// Removing, per member it no longer goes to that may still hold the
	// ConfigMap, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Members []fleetv1.MemberStatus `json:"members,omitempty"`
	// ReadyMembers counts the members that hold the ConfigMap as the
	// spec says.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// TotalMembers counts the members the ConfigSet goes to.
	// +optional
	TotalMembers int32 `json:"totalMembers,omitempty"`
	// Conditions holds ConditionReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ConfigSetList is a list of ConfigSets.
type ConfigSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigSet `json:"items"`
}
