package crd_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/ctrlkit/ctrlkit/foo/crd"
)

// install is the package documentation's example.
func install(ctx context.Context, dyn dynamic.Interface) error {
	obj, err := crd.FooUnstructured()
	if err != nil {
		return err
	}
	crds := dyn.Resource(schema.GroupVersionResource{
		Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
	})
	_, err = crds.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func TestPackageDocExample(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	require.NoError(t, install(context.Background(), dyn))
	_, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(context.Background(), "foos.samplecontroller.k8s.io", metav1.GetOptions{})
	require.NoError(t, err)
}
