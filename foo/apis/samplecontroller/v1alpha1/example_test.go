package v1alpha1_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

func ExampleValidateFooSpec() {
	replicas := int32(-1)
	spec := &v1alpha1.FooSpec{DeploymentName: "Web_Frontend", Replicas: &replicas}
	for _, err := range v1alpha1.ValidateFooSpec(spec) {
		fmt.Println(err.Field)
	}
	// Output:
	// spec.deploymentName
	// spec.replicas
}
