package events

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The recorder's own scheme holds the types it is given, and none of
// client-go's, which it finds in client-go's scheme: a copy of them would
// take about 170 KB for every recorder.
func TestSchemeHoldsOnlyTheGivenTypes(t *testing.T) {
	given := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(given))
	custom := schema.GroupVersionKind{Group: "example.ctrlkit.io", Version: "v1", Kind: "Thing"}
	given.AddKnownTypeWithName(custom, &corev1.ConfigMap{})
	added := schema.GroupVersionKind{Group: "example.ctrlkit.io", Version: "v1", Kind: "Other"}

	scheme, err := buildScheme([]*runtime.Scheme{given}, []func(*runtime.Scheme) error{func(s *runtime.Scheme) error {
		s.AddKnownTypeWithName(added, &corev1.Secret{})
		return nil
	}})
	require.NoError(t, err)
	assert.True(t, scheme.Recognizes(custom), "a type of WithScheme")
	assert.True(t, scheme.Recognizes(added), "a type of WithAddToScheme")
	assert.False(t, scheme.Recognizes(corev1.SchemeGroupVersion.WithKind("Pod")), "client-go's types are not copied")

	r := &recorder{types: scheme}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = "ns", "p"
	assert.Equal(t, &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p"}, r.regarding(pod),
		"a client-go type is referred to through client-go's scheme")
	secret := &corev1.Secret{}
	assert.Same(t, secret, r.regarding(secret), "a type of the recorder's scheme is handed on")
	assert.Nil(t, r.regarding(nil))
}
