// Package crd holds the CustomResourceDefinition of the Foo API
// (foos.samplecontroller.k8s.io), embedded in the binary so that tests and
// programs can install it without a copy of the repository.
//
// The manifest is also a plain file, samplecontroller.k8s.io_foos.yaml, for
// kubectl:
//
//	kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml
//
// From Go, with a dynamic client:
//
//	obj, err := crd.FooUnstructured()
//	if err != nil {
//		return err
//	}
//	crds := dyn.Resource(schema.GroupVersionResource{
//		Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
//	})
//	_, err = crds.Create(ctx, obj, metav1.CreateOptions{})
package crd

import (
	_ "embed" // for the manifest
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Name is the metadata.name of the Foo CustomResourceDefinition.
const Name = "foos.samplecontroller.k8s.io"

// FileName is the name of the manifest file in this package's directory.
const FileName = "samplecontroller.k8s.io_foos.yaml"

//go:embed samplecontroller.k8s.io_foos.yaml
var fooYAML []byte

// FooYAML returns the Foo CustomResourceDefinition (apiextensions.k8s.io/v1)
// as YAML, exactly as in FileName. Each call returns a new copy that the
// caller may modify.
func FooYAML() []byte {
	return slices.Clone(fooYAML)
}

// FooUnstructured returns the Foo CustomResourceDefinition decoded into a new
// Unstructured object, ready for a dynamic client's Create or Apply. Numbers
// decode as int64, as the dynamic client expects. The error reports a
// manifest that does not parse, which a test of this package rules out.
func FooUnstructured() (*unstructured.Unstructured, error) {
	data, err := yaml.ToJSON(fooYAML)
	if err != nil {
		return nil, fmt.Errorf("converting %s to JSON: %w", FileName, err)
	}
	obj := &unstructured.Unstructured{}
	if err := runtime.DecodeInto(unstructured.UnstructuredJSONScheme, data, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", FileName, err)
	}
	return obj, nil
}
