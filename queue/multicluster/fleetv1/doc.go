// Package fleetv1 holds the API types a custom resource of a fleet
// operator uses in its status: MemberStatus, one member cluster's entry,
// as multicluster.Results.Status builds it. The types have deep copies (DeepCopyInto) and
// OpenAPI definitions ("+k8s:openapi-gen=true"), so an API package made with apigen (or
// controller-gen) can declare a field of them, as it declares a
// metav1.Condition.
//
// +k8s:openapi-gen=true
package fleetv1
