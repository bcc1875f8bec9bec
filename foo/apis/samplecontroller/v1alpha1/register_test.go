package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

func TestAddToSchemeRegistersFooAndFooList(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))

	tests := []struct {
		obj  runtime.Object
		kind string
	}{
		{obj: &v1alpha1.Foo{}, kind: "Foo"},
		{obj: &v1alpha1.FooList{}, kind: "FooList"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			gvks, _, err := scheme.ObjectKinds(tt.obj)
			require.NoError(t, err)
			assert.Equal(t, []schema.GroupVersionKind{{
				Group: "samplecontroller.k8s.io", Version: "v1alpha1", Kind: tt.kind,
			}}, gvks)
		})
	}
	assert.True(t, scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind("ListOptions")),
		"the meta/v1 option types are registered for the group version")
}

func TestKindAndResource(t *testing.T) {
	assert.Equal(t, schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}, v1alpha1.Kind("Foo"))
	assert.Equal(t, schema.GroupResource{Group: "samplecontroller.k8s.io", Resource: "foos"}, v1alpha1.Resource("foos"))
	assert.Equal(t, "samplecontroller.k8s.io/v1alpha1", v1alpha1.SchemeGroupVersion.String())
}

// The sample-controller example manifest decodes unchanged, and its fields
// land where sample-controller puts them.
func TestDecodeSampleControllerExample(t *testing.T) {
	const example = `apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata:
  name: example-foo
spec:
  deploymentName: example-foo
  replicas: 1
`
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	obj, gvk, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(example), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.SchemeGroupVersion.WithKind("Foo"), *gvk)

	foo, ok := obj.(*v1alpha1.Foo)
	require.True(t, ok, "decoded %T", obj)
	assert.Equal(t, "example-foo", foo.Name)
	assert.Equal(t, "example-foo", foo.Spec.DeploymentName)
	require.NotNil(t, foo.Spec.Replicas)
	assert.Equal(t, int32(1), *foo.Spec.Replicas)
}

func TestDeepCopyIsIndependent(t *testing.T) {
	replicas := int32(2)
	orig := &v1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
		Spec:       v1alpha1.FooSpec{DeploymentName: "a", Replicas: &replicas},
		Status: v1alpha1.FooStatus{Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonDeploymentNotReady,
		}}},
	}
	cp := orig.DeepCopy()
	require.Equal(t, orig, cp)

	*cp.Spec.Replicas = 3
	cp.Status.Conditions[0].Status = metav1.ConditionTrue
	assert.Equal(t, int32(2), *orig.Spec.Replicas)
	assert.Equal(t, metav1.ConditionFalse, orig.Status.Conditions[0].Status)

	list := &v1alpha1.FooList{Items: []v1alpha1.Foo{*orig}}
	obj := list.DeepCopyObject()
	assert.Equal(t, list, obj)
}
