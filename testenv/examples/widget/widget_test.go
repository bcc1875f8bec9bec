package widget_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"

	"example.com/widget"
	"example.com/widget/generated/clientset/versioned"
	"example.com/widget/generated/informers/externalversions"
)

// controllerUser is the identity the controller runs as in the shared
// control plane: bound to the ClusterRole of config/rbac and nothing else.
const controllerUser = "widget-controller"

// env is one API-server-only control plane for every test of the package
// that calls env.Get, with the CRD installed and the controller's user.
var env = controlplane.Shared{Options: controlplane.Options{
	CRDs:  []string{"config/crd"},
	Users: []controlplane.User{{Name: controllerUser, ClusterRoles: []string{"widget-controller"}}},
}}

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// The controller, with exactly the permissions of config/rbac (generated from
// its markers), creates and updates a Widget's ConfigMap and records the
// generation with a server-side apply of the status; the audit log shows no
// refused request and no write beyond those.
func TestWidgetGetsItsConfigMap(t *testing.T) {
	cp := env.Get(t)
	ctx := t.Context()
	out, err := cp.KubectlCommand(ctx, "apply", "-f", "config/rbac").CombinedOutput()
	require.NoError(t, err, "%s", out)
	ns := newNamespace(t, cp.Config(), "basic")

	waitAllowed(t, cp.Config(), controllerUser, "list", "example.com", "widgets")
	cfg, err := cp.UserConfig(controllerUser)
	require.NoError(t, err)
	runController(t, cfg)

	widgets := versioned.NewForConfigOrDie(cp.Config()).ExampleV1().Widgets(ns)
	_, err = widgets.Create(ctx, newWidget("hello", "hello, world"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitConverged(t, cp.Config(), ns, "hello", "hello, world")

	w, err := widgets.Get(ctx, "hello", metav1.GetOptions{})
	require.NoError(t, err)
	w.Spec.Message = "goodbye"
	_, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitConverged(t, cp.Config(), ns, "hello", "goodbye")

	_, err = widgets.Create(ctx, newWidget("empty", ""), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "the CRD's schema refuses an empty message: %v", err)

	events, err := cp.AuditEvents()
	require.NoError(t, err)
	mine := []audit.Filter{audit.ByUser(controllerUser), audit.ByNamespace(ns)}
	assert.Zero(t, audit.Count(events, audit.ByUser(controllerUser), audit.ByCode(403)), "refused requests")
	assert.Equal(t, 1, audit.Count(events, append(mine, audit.ByVerb("create"), audit.ByResource("", "configmaps"), audit.Succeeded())...))
	assert.Equal(t, 1, audit.Count(events, append(mine, audit.ByVerb("update"), audit.ByResource("", "configmaps"), audit.Succeeded())...))
	assert.Equal(t, 2, audit.Count(events, append(mine, audit.ByVerb("patch"), audit.ByResource("example.com", "widgets"), audit.BySubresource("status"), audit.Succeeded())...),
		"one status apply per generation")
	written := append(mine, audit.Writes(), audit.Succeeded())
	assert.Equal(t, 4, audit.Count(events, written...), "no other write:\n%s", audit.FormatTally(audit.Tally(audit.Select(events, written...))))
}

// With the garbage collector of a full control plane, deleting a Widget
// deletes its ConfigMap through the owner reference.
func TestConfigMapGoesWithItsWidget(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.Full, CRDs: []string{"config/crd"}})
	ctx := t.Context()
	ns := newNamespace(t, cp.Config(), "gc")
	runController(t, cp.Config())

	widgets := versioned.NewForConfigOrDie(cp.Config()).ExampleV1().Widgets(ns)
	_, err := widgets.Create(ctx, newWidget("short-lived", "bye"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitConverged(t, cp.Config(), ns, "short-lived", "bye")

	require.NoError(t, widgets.Delete(ctx, "short-lived", metav1.DeleteOptions{}))
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "short-lived", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "ConfigMap still there: %v", err)
	}, time.Minute, 100*time.Millisecond)
}

// waitAllowed waits until RBAC lets user do verb on resource: the API
// server's authorizer sees a new ClusterRole a moment after it is created.
// It asks as the admin, so the user's own audit trail stays clean.
func waitAllowed(t *testing.T, admin *rest.Config, user, verb, group, resource string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(admin)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource},
			},
		}, metav1.CreateOptions{})
		require.NoError(c, err)
		assert.True(c, review.Status.Allowed, "%s may not %s %s yet", user, verb, resource)
	}, 10*time.Second, 50*time.Millisecond)
}

// runController runs the widget controller with cfg until the test ends.
func runController(t *testing.T, cfg *rest.Config) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	client := versioned.NewForConfigOrDie(cfg)
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	widgetInformers := externalversions.NewSharedInformerFactory(client, 0)
	ctrl, err := widget.NewController(kube, client, widgetInformers.Example().V1().Widgets(), kubeInformers.Core().V1().ConfigMaps())
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	kubeInformers.Start(ctx.Done())
	widgetInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		kubeInformers.Shutdown()
		widgetInformers.Shutdown()
	})
}

// waitConverged waits until the Widget's ConfigMap holds message and its
// status records the current generation.
func waitConverged(t *testing.T, cfg *rest.Config, ns, name, message string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	widgets := versioned.NewForConfigOrDie(cfg).ExampleV1().Widgets(ns)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, message, cm.Data["message"])
		w, err := widgets.Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, w.Generation, w.Status.ObservedGeneration)
	}, 30*time.Second, 50*time.Millisecond)
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T, cfg *rest.Config, prefix string) string {
	t.Helper()
	ns, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns.Name
}
