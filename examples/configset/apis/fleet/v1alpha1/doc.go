// Package v1alpha1 is version v1alpha1 of the fleet.ctrlkit.io API group:
// the ConfigSet resource of the management cluster, which the
// examples/configset operator applies to the member clusters of a fleet
// as a ConfigMap, reporting each member in its status.
//
// Clients, listers and informers for these types are generated under
// github.com/ctrlkit/ctrlkit/examples/configset/generated; the
// CustomResourceDefinition, generated from these types and their markers,
// is in examples/configset/deploy/crd.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=fleet.ctrlkit.io
package v1alpha1
