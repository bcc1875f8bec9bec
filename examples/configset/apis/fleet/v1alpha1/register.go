package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the ConfigSet resource.
const GroupName = "fleet.ctrlkit.io"

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource returns the group-qualified resource for the given resource name
// in this group, for example Resource("configsets") is
// configsets.fleet.ctrlkit.io.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this package's types to
	// a scheme; the generated clientsets use it.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds ConfigSet and ConfigSetList under SchemeGroupVersion
	// to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &ConfigSet{}, &ConfigSetList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
