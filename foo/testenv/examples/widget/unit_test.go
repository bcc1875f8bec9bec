package widget_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"

	"example.com/widget"
)

// The controller over fake clientsets, without a control plane: a Widget
// gets its ConfigMap, controlled by it, and its status records the
// generation; an edit of the ConfigMap is undone, which only the watch of
// ConfigMaps (the Widget enqueued as the ConfigMap's owner) brings about.
func TestControllerOverFakeClients(t *testing.T) {
	ctx := t.Context()
	w := newWidget("hello", "hello, world")
	w.SetNamespace("ns")
	w.SetUID(types.UID("uid-hello"))
	w.SetGeneration(3)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widget.Resource: "WidgetList"}, w)
	kube := fake.NewClientset()
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	dynInformers := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	ctrl, err := widget.NewController(kube, dyn, widget.Informer(dynInformers), kubeInformers.Core().V1().ConfigMaps())
	require.NoError(t, err)

	stop := make(chan struct{})
	dynInformers.Start(stop)
	t.Cleanup(func() { close(stop); dynInformers.Shutdown() }) // after the controller stopped
	for gvr, ok := range dynInformers.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "the informer of %s synced", gvr)
	}
	queuetest.Start(t, ctrl, operator.WithInformers(kubeInformers))
	queuetest.WaitIdle(t, ctrl, kube, dyn)

	cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"message": "hello, world"}, cm.Data)
	assert.True(t, metav1.IsControlledBy(cm, w), "the ConfigMap is controlled by its Widget: %v", cm.OwnerReferences)
	got, err := dyn.Resource(widget.Resource).Namespace("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	observed, _, err := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
	require.NoError(t, err)
	assert.Equal(t, int64(3), observed, "status.observedGeneration")

	cm.Data = map[string]string{"message": "edited behind the controller's back"}
	_, err = kube.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrl, kube, dyn)
	cm, err = kube.CoreV1().ConfigMaps("ns").Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"message": "hello, world"}, cm.Data, "the edit is undone")
}
