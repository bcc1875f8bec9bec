package widget_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/testenv/audit"

	"example.com/widget"
)

// mirrorScenario takes ConfigMaps in namespace ns through opting in to the
// mirror, renaming their entry, opting out and being deleted; settle waits
// until check holds.
func mirrorScenario(t *testing.T, kube kubernetes.Interface, ns string, mirror *widget.Mirror, settle func(check func(c *assert.CollectT))) {
	ctx := t.Context()
	configMaps := kube.CoreV1().ConfigMaps(ns)
	annotate := func(name, value string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) { // retried on a conflict with the controller's patch
			cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
			require.NoError(c, err)
			if value == "" {
				delete(cm.Annotations, widget.MirrorAs)
			} else {
				if cm.Annotations == nil {
					cm.Annotations = map[string]string{}
				}
				cm.Annotations[widget.MirrorAs] = value
			}
			_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(c, err)
		}, 30*time.Second, 20*time.Millisecond)
	}
	get := func(c *assert.CollectT, name string) *corev1.ConfigMap {
		cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		return cm
	}

	_, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"k": "0"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared",
		Annotations: map[string]string{widget.MirrorAs: "alpha"}}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	settle(func(c *assert.CollectT) {
		assert.Equal(c, map[string]map[string]string{"alpha": {"k": "1"}}, mirror.Entries(), "only the ConfigMap that opted in")
		cm := get(c, "shared")
		assert.Equal(c, []string{widget.MirrorFinalizer}, cm.Finalizers)
		assert.Equal(c, "alpha", cm.Annotations[widget.MirrorFinalizer], "the entry's name is kept with the finalizer")
		assert.Empty(c, get(c, "plain").Finalizers, "a ConfigMap out of scope gets no finalizer")
	})

	annotate("shared", "beta")
	settle(func(c *assert.CollectT) {
		assert.Equal(c, map[string]map[string]string{"beta": {"k": "1"}}, mirror.Entries(), "renamed: the old entry is gone")
		assert.Equal(c, "beta", get(c, "shared").Annotations[widget.MirrorFinalizer])
	})

	annotate("shared", "")
	settle(func(c *assert.CollectT) {
		assert.Empty(c, mirror.Entries(), "opted out: the entry is gone")
		cm := get(c, "shared")
		assert.Empty(c, cm.Finalizers, "and the ConfigMap released")
		assert.NotContains(c, cm.Annotations, widget.MirrorFinalizer)
	})

	annotate("shared", "gamma")
	settle(func(c *assert.CollectT) { assert.Contains(c, mirror.Entries(), "gamma") })
	require.NoError(t, configMaps.Delete(ctx, "shared", metav1.DeleteOptions{}))
	settle(func(c *assert.CollectT) {
		assert.Empty(c, mirror.Entries(), "deleted: the entry is gone")
		_, err := configMaps.Get(ctx, "shared", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "and the ConfigMap with it: %v", err)
	})
}

// The mirror controller over a strict fake clientset.
func TestMirrorOverFakeClients(t *testing.T) {
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	mirror := &widget.Mirror{}
	ctrl, err := widget.NewMirrorController(kube, factory.Core().V1().ConfigMaps(), mirror)
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	mirrorScenario(t, kube, "ns", mirror, func(check func(c *assert.CollectT)) {
		queuetest.WaitIdle(t, ctrl, kube)
		require.EventuallyWithT(t, check, 10*time.Second, 10*time.Millisecond)
	})
}

// The mirror controller on the real API server, as the widget controller's
// user with the generated role: every finalizer patch is accepted, and
// nothing is refused.
func TestMirrorOnTheAPIServer(t *testing.T) {
	cp := env.Get(t)
	out, err := cp.KubectlCommand(t.Context(), "apply", "-f", "config/rbac").CombinedOutput()
	require.NoError(t, err, "%s", out)
	ns := newNamespace(t, cp.Config(), "mirror")
	waitAllowed(t, cp.Config(), controllerUser, "patch", "", "configmaps")
	cfg, err := cp.UserConfig(controllerUser)
	require.NoError(t, err)

	kube := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(kube, 0)
	mirror := &widget.Mirror{}
	ctrl, err := widget.NewMirrorController(kube, factory.Core().V1().ConfigMaps(), mirror)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		factory.Shutdown()
	})

	mirrorScenario(t, kubernetes.NewForConfigOrDie(cp.Config()), ns, mirror, func(check func(c *assert.CollectT)) {
		require.EventuallyWithT(t, check, 30*time.Second, 20*time.Millisecond)
	})
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	assert.Zero(t, audit.Count(events, audit.ByUser(controllerUser), audit.ByNamespace(ns), audit.ByCode(403)), "refused requests")
	assert.Zero(t, audit.Count(events, audit.ByUser(controllerUser), audit.ByNamespace(ns), audit.ByCode(422)), "invalid patches")
}
