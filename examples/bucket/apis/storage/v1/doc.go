// Package v1 is version v1 of the storage.ctrlkit.io API group: the Bucket
// resource, which declares a bucket in a storage service outside the
// cluster, run by the examples/bucket operator. It is the version the
// operator works with and the one the API server stores; the operator's
// conversion webhook serves v1alpha1 from it (see package v1alpha1).
//
// Clients, listers and informers for these types are generated under
// github.com/ctrlkit/ctrlkit/examples/bucket/generated; the
// CustomResourceDefinition, generated from these types and their markers,
// is in examples/bucket/deploy/crd.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=storage.ctrlkit.io
package v1
