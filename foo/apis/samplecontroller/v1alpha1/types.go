package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds and defaults of FooSpec. The +kubebuilder markers on the fields
// below put the same values into the CustomResourceDefinition generated into
// github.com/ctrlkit/ctrlkit/foo/crd, which enforces them on the API server,
// and ValidateFooSpec enforces them in Go; change all three together (a
// test of foo/crd compares the CRD with these constants).
const (
	// DeploymentNameMaxLength is the longest allowed spec.deploymentName: the
	// length limit of a DNS-1123 subdomain, which is what Deployment names are.
	DeploymentNameMaxLength = 253

	// MinReplicas is the smallest allowed spec.replicas. Zero is allowed and
	// scales the Deployment down to no pods.
	MinReplicas int32 = 0

	// MaxReplicas is the largest allowed spec.replicas. The cap is a guard
	// against typing mistakes (10000 for 100) that would flood a cluster with
	// pods; it is far above what a sample workload needs.
	MaxReplicas int32 = 1000

	// DefaultReplicas is the replica count of a Foo whose spec.replicas is
	// unset. The CRD's schema fills it in on the API server; clients that
	// bypass the schema (fake clientsets, for one) can still see nil.
	DefaultReplicas int32 = 1

	// MaxNameLength bounds a Foo's name: the controller labels the pods of
	// the Foo's Deployment with the name, and a label value has at most 63
	// characters. The CRD enforces it on metadata.name.
	MaxNameLength = 63
)

// ConditionReady is the type of the condition in status.conditions that
// summarises a Foo: True when its Deployment is in place and fully available,
// False with one of the Reason constants below otherwise.
const ConditionReady = "Ready"

// Reasons of the Ready condition. ReasonErrResourceExists and
// ReasonInvalidSpec are also the reasons of the Warning events that report the
// same situations.
const (
	// ReasonDeploymentReady (Ready=True): the Deployment named
	// spec.deploymentName is controlled by this Foo, matches its spec, and
	// reports as many available replicas as the Foo asks for.
	ReasonDeploymentReady = "DeploymentReady"

	// ReasonDeploymentNotReady (Ready=False): the Deployment is controlled by
	// this Foo and matches its spec, but fewer replicas are available than
	// desired, for example while a rollout is in progress or pods fail.
	ReasonDeploymentNotReady = "DeploymentNotReady"

	// ReasonErrResourceExists (Ready=False): a Deployment named
	// spec.deploymentName exists in the Foo's namespace and is not controlled
	// by this Foo. The controller never writes to it and retries with backoff,
	// since the other Deployment may go away.
	ReasonErrResourceExists = "ErrResourceExists"

	// ReasonInvalidSpec (Ready=False): the spec fails ValidateFooSpec (the
	// CRD's schema normally rejects such a Foo before it is stored). The
	// controller does nothing for the Foo until its spec changes.
	ReasonInvalidSpec = "InvalidSpec"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=foos,singular=foo,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.availableReplicas
// +kubebuilder:printcolumn:name=Deployment,type=string,JSONPath=`.spec.deploymentName`,description="Name of the Deployment the Foo runs."
// +kubebuilder:printcolumn:name=Desired,type=integer,JSONPath=`.spec.replicas`,description="Desired number of replicas."
// +kubebuilder:printcolumn:name=Available,type=integer,JSONPath=`.status.availableReplicas`,description="Available replicas of the Deployment."
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Status of the Ready condition."
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name may have at most 63 characters: the controller labels the pods of the Foo's Deployment with the Foo's name"

// Foo asks for a Deployment of a given name and replica count in the Foo's
// namespace. The foo controller creates that Deployment, owns it, keeps it in
// line with the spec and reports on it in the status.
type Foo struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Foo.
	// +required
	Spec FooSpec `json:"spec"`
	// Status is the state the controller last observed. It is written
	// through the status subresource.
	// +optional
	Status FooStatus `json:"status,omitempty"`
}

// FooSpec is the desired state of a Foo.
type FooSpec struct {
	// DeploymentName is the name of the Deployment to run, in the Foo's
	// namespace. It must be a DNS-1123 subdomain of at most
	// DeploymentNameMaxLength characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	DeploymentName string `json:"deploymentName"`
	// Replicas is the desired number of pods, between MinReplicas and
	// MaxReplicas. Unset means DefaultReplicas.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	Replicas *int32 `json:"replicas,omitempty"`
}

// FooStatus is the observed state of a Foo.
type FooStatus struct {
	// AvailableReplicas mirrors status.availableReplicas of the Foo's
	// Deployment.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AvailableReplicas int32 `json:"availableReplicas"`
	// ObservedGeneration is the metadata.generation of the Foo that the
	// controller last acted on. When it is lower than metadata.generation,
	// the rest of the status describes an older spec.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the latest observations of the Foo's state, keyed by
	// type. The controller maintains ConditionReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FooList is a list of Foos.
type FooList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Foos in the list.
	Items []Foo `json:"items"`
}
