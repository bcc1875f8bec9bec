package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the Foo resource.
const GroupName = "samplecontroller.k8s.io"

// Version is the API version of this package.
const Version = "v1alpha1"

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// Kind returns the group-qualified kind for the given kind name in this
// group, for example Kind("Foo") is Foo.samplecontroller.k8s.io.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource returns the group-qualified resource for the given resource name
// in this group, for example Resource("foos") is foos.samplecontroller.k8s.io.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this package's types to
	// a scheme. It is the hook the generated clientsets use; most callers
	// want AddToScheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds Foo and FooList (and the common meta/v1 option types)
	// under SchemeGroupVersion to the given scheme. It does not touch any
	// process-wide scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Foo{},
		&FooList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
