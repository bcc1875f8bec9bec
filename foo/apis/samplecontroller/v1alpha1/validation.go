package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateFooSpec checks spec against the rules the CustomResourceDefinition
// enforces on the API server: spec.deploymentName is required and is a
// DNS-1123 subdomain of at most DeploymentNameMaxLength characters, and
// spec.replicas, when set, is between MinReplicas and MaxReplicas.
//
// It exists for clients the schema does not protect (fake clientsets, older
// or hand-installed CRDs). It returns every problem found, with field paths
// rooted at "spec", or an empty list when the spec is valid. A nil spec is
// reported as a required spec.
func ValidateFooSpec(spec *FooSpec) field.ErrorList {
	specPath := field.NewPath("spec")
	if spec == nil {
		return field.ErrorList{field.Required(specPath, "")}
	}

	var errs field.ErrorList
	namePath := specPath.Child("deploymentName")
	if spec.DeploymentName == "" {
		errs = append(errs, field.Required(namePath, "must be the name of the Deployment to run"))
	} else {
		// IsDNS1123Subdomain also reports names longer than
		// DeploymentNameMaxLength (253, validation.DNS1123SubdomainMaxLength).
		for _, msg := range validation.IsDNS1123Subdomain(spec.DeploymentName) {
			errs = append(errs, field.Invalid(namePath, spec.DeploymentName, msg))
		}
	}

	if r := spec.Replicas; r != nil && (*r < MinReplicas || *r > MaxReplicas) {
		errs = append(errs, field.Invalid(specPath.Child("replicas"), *r,
			validation.InclusiveRangeError(int(MinReplicas), int(MaxReplicas))))
	}
	return errs
}

// ValidateFoo checks a whole Foo: its name, which must be a valid label
// value (at most MaxNameLength characters) because the controller labels
// the Deployment's pods with it, and its spec (see ValidateFooSpec). It
// returns every problem found; a nil Foo is reported as required.
func ValidateFoo(foo *Foo) field.ErrorList {
	if foo == nil {
		return field.ErrorList{field.Required(field.NewPath("foo"), "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(foo.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), foo.Name,
			msg+" (the name labels the pods of the Foo's Deployment)"))
	}
	return append(errs, ValidateFooSpec(&foo.Spec)...)
}
