package write

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// What of a patch's answer a trimmed object is judged on: the fields its
// trimmed copy or the mutated copy has set, item by item through lists
// (on the fields any item has set), the identity, the trace context
// annotation and the mark; nothing else of the answer.
func TestTrimmedAnswerKeepsWhatTheControllerCouldSeeOrSet(t *testing.T) {
	meta := func(rv string, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: rv, Generation: 1, Annotations: ann}
	}
	containers := func(cs ...corev1.Container) appsv1.DeploymentSpec {
		return appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}}
	}
	current := &appsv1.Deployment{ObjectMeta: meta("1", map[string]string{informer.TrimmedAnnotation: "true"}),
		Spec: containers(corev1.Container{Name: "nginx", Image: "nginx:1"}, corev1.Container{Name: "sidecar", Image: "proxy:1"})}
	obj := current.DeepCopy()
	obj.Spec.Replicas = ptr.To[int32](2)
	obj.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways

	answer := &appsv1.Deployment{
		ObjectMeta: meta("2", map[string]string{"team": "a", tracing.Annotation: "00-trace"}),
		Spec: containers(
			corev1.Container{Name: "nginx", Image: "nginx:1", Args: []string{"-v"}, ImagePullPolicy: corev1.PullIfNotPresent},
			corev1.Container{Name: "sidecar", Image: "proxy:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
			corev1.Container{Name: "injected", Image: "mesh:1", TerminationMessagePath: "/dev/log"},
		),
		Status: appsv1.DeploymentStatus{Replicas: 3, ObservedGeneration: 1},
	}
	answer.Labels = map[string]string{"app": "web"}
	answer.Finalizers = []string{"example.com/hold"}
	answer.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	answer.Spec.Paused = true
	sent := answer.DeepCopy()

	got, err := trimmedAnswer(current, obj, answer)
	require.NoError(t, err)
	want := &appsv1.Deployment{
		ObjectMeta: meta("2", map[string]string{informer.TrimmedAnnotation: "true", tracing.Annotation: "00-trace"}),
		Spec: containers(
			corev1.Container{Name: "nginx", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent},
			corev1.Container{Name: "sidecar", Image: "proxy:1"},
			corev1.Container{Name: "injected", Image: "mesh:1"},
		),
	}
	want.Finalizers = []string{"example.com/hold"}
	assert.Equal(t, want, got)
	assert.Equal(t, sent, answer, "the answer is left as it was")

	// A field both copies show as a zero value is not judged (a Go type
	// without omitempty shows one for a field the informer did not keep):
	// it keeps that value, as a pointer to zero stays one. The mark stays
	// where the answer has no annotations.
	answer.Annotations = nil
	answer.Spec.Replicas = ptr.To[int32](5)
	answer.Spec.Template.Spec.Containers[1].ImagePullPolicy = corev1.PullNever
	current.Spec.Replicas, obj.Spec.Replicas = ptr.To[int32](0), ptr.To[int32](0)
	got, err = trimmedAnswer(current, obj, answer)
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](0), got.Spec.Replicas)
	assert.Equal(t, corev1.PullNever, got.Spec.Template.Spec.Containers[1].ImagePullPolicy, "another item sets the field")
	assert.Equal(t, map[string]string{informer.TrimmedAnnotation: "true"}, got.Annotations)
}
