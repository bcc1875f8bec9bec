package widget_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"

	"example.com/widget"
	examplev1 "example.com/widget/apis/example/v1"
	widgetac "example.com/widget/generated/applyconfiguration/example/v1"
	widgetfake "example.com/widget/generated/clientset/versioned/fake"
	"example.com/widget/generated/informers/externalversions"
)

// The controller over the generated fake clientset and client-go's, made
// one strict API server, without a control plane: a Widget gets its
// ConfigMap, controlled by it, and its status records the generation
// through a server-side apply that the fake serves with the Widget's
// schema; an edit of the ConfigMap is undone, which only the watch of
// ConfigMaps (the Widget enqueued as the ConfigMap's owner) brings about.
func TestControllerOverFakeClients(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset()
	widgets := widgetfake.NewClientset()
	reconciletest.Strict(kube, widgets)
	w, err := widgets.ExampleV1().Widgets("ns").Create(ctx, newWidget("hello", "hello, world"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, w.UID, "the strict fake gives the Widget a UID")
	require.Equal(t, int64(1), w.Generation, "and a generation")

	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	widgetInformers := externalversions.NewSharedInformerFactory(widgets, 0)
	ctrl, err := widget.NewController(kube, widgets, widgetInformers.Example().V1().Widgets(), kubeInformers.Core().V1().ConfigMaps())
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(kubeInformers, widgetInformers))
	queuetest.WaitIdle(t, ctrl, kube, widgets)

	cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"message": "hello, world"}, cm.Data)
	assert.True(t, metav1.IsControlledBy(cm, w), "the ConfigMap is controlled by its Widget: %v", cm.OwnerReferences)
	got, err := widgets.ExampleV1().Widgets("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Status.ObservedGeneration, "status.observedGeneration")
	for _, m := range got.ManagedFields {
		t.Logf("managed %s %s %q %s", m.Manager, m.Operation, m.Subresource, m.FieldsV1.String())
	}
	applied, err := widgetac.ExtractWidgetStatus(got, widget.FieldManager)
	require.NoError(t, err)
	require.NotNil(t, applied.Status)
	assert.Equal(t, int64(1), *applied.Status.ObservedGeneration, "the controller's field manager owns the status it applied")

	cm.Data = map[string]string{"message": "edited behind the controller's back"}
	_, err = kube.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrl, kube, widgets)
	cm, err = kube.CoreV1().ConfigMaps("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"message": "hello, world"}, cm.Data, "the edit is undone")

	got.Spec.Message = "goodbye"
	_, err = widgets.ExampleV1().Widgets("ns").Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrl, kube, widgets)
	got, err = widgets.ExampleV1().Widgets("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Generation, "a spec change is a new generation")
	assert.Equal(t, int64(2), got.Status.ObservedGeneration, "which the status records")
}

func newWidget(name, message string) *examplev1.Widget {
	return &examplev1.Widget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       examplev1.WidgetSpec{Message: message},
	}
}
