package crd_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/foo/crd"
)

func ExampleFooUnstructured() {
	obj, err := crd.FooUnstructured()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obj.GetKind(), obj.GetName())
	// Output: CustomResourceDefinition foos.samplecontroller.k8s.io
}
