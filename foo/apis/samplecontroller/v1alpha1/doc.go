// Package v1alpha1 is version v1alpha1 of the samplecontroller.k8s.io API
// group: the Foo resource, a request for a Deployment with a given name and
// replica count, run by the foo controller.
//
// The JSON shape of Foo is that of kubernetes/sample-controller
// (spec.deploymentName, spec.replicas, status.availableReplicas), so its
// manifests work unchanged; status.observedGeneration and status.conditions
// are additions. Clients, listers, informers and apply configurations for these
// types are generated under github.com/ctrlkit/ctrlkit/foo/generated; the
// CustomResourceDefinition is in github.com/ctrlkit/ctrlkit/foo/crd.
//
// Register the types with a scheme before use:
//
//	scheme := runtime.NewScheme()
//	if err := v1alpha1.AddToScheme(scheme); err != nil {
//		return err
//	}
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=samplecontroller.k8s.io
package v1alpha1
