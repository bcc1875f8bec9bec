// Package v1alpha1 is version v1alpha1 of the storage.ctrlkit.io API group:
// the Bucket resource, which declares a bucket in a storage service outside
// the cluster, run by the examples/bucket operator.
//
// Clients, listers and informers for these types are generated under
// github.com/ctrlkit/ctrlkit/examples/bucket/generated; the
// CustomResourceDefinition is examples/bucket/deploy/crd.yaml.
//
// +k8s:deepcopy-gen=package
// +groupName=storage.ctrlkit.io
package v1alpha1
