package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// The reliability tests (chaos, leader election, bad input, least
// privilege) share the helpers in this file. Each test starts its own full
// control plane, so that the API server restarts of one cannot disturb
// another and each audit log holds one test's requests only.

const (
	// relFooUserAgent is the user agent examples/foo sends; it tells the
	// controller's own requests apart from a test's probes with the same
	// credentials.
	relFooUserAgent = "ctrlkit-foo-controller"
	// relLeaseNamespace holds the Lease, as in examples/foo/deploy.
	relLeaseNamespace = "foo-system"
	// relLeaseName is the Lease examples/foo elects with by default.
	relLeaseName = "foo-controller.samplecontroller.k8s.io"
	// relPoll is how often the reliability tests poll.
	relPoll = 100 * time.Millisecond
)

// relRig is a full control plane with the Foo CRD installed, the examples/foo
// binary built, and admin clients.
type relRig struct {
	t    *testing.T
	cp   *controlplane.ControlPlane
	root string
	bin  string
	// admin is the admin's rest.Config, with a client rate limit high
	// enough for creating hundreds of objects at once.
	admin *rest.Config
	kube  kubernetes.Interface
	foos  fooclientset.Interface
}

// relOptions are the control plane options of the reliability tests: the
// static-token users. (The control plane never rotates its audit log, which
// a long chaos test would otherwise fill past 100 MB.)
func relOptions(users ...string) controlplane.Options {
	var opts controlplane.Options
	for _, u := range users {
		opts.Users = append(opts.Users, controlplane.User{Name: u})
	}
	return opts
}

// newRelRig starts a full control plane with opts (Size and CRDs are set
// here) while the binary builds.
func newRelRig(t *testing.T, opts controlplane.Options) *relRig {
	t.Helper()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "foo", true)
	opts.Size = controlplane.Full
	opts.CRDs = []string{filepath.Join(root, "foo", "crd")}
	cp := controlplane.StartT(t, opts)
	bin := waitBinary()
	t.Logf("control plane and binary ready after %s", time.Since(begin).Round(time.Millisecond))

	r := &relRig{t: t, cp: cp, root: root, bin: bin, admin: cp.Config()}
	r.admin.QPS, r.admin.Burst = 1000, 1000
	r.kube, err = kubernetes.NewForConfig(r.admin)
	require.NoError(t, err)
	r.foos, err = fooclientset.NewForConfig(r.admin)
	require.NoError(t, err)
	return r
}

// readManifest decodes the objects of examples/foo/deploy/<file>, as the
// file is, into typed objects.
func (r *relRig) readManifest(file string) []runtime.Object {
	r.t.Helper()
	objs, err := controlplane.ReadObjects(filepath.Join(r.root, "examples", "foo", "deploy", file))
	require.NoError(r.t, err)
	return objs
}

// createObjects creates typed objects as the admin.
func (r *relRig) createObjects(objs ...runtime.Object) {
	r.t.Helper()
	require.NoError(r.t, controlplane.CreateObjects(r.t.Context(), r.kube, objs...))
}

// grantControllerRoles installs namespace.yaml, role.yaml and rbac.yaml of
// examples/foo/deploy and binds the manifests' roles to static-token users
// as well: every binding of rbac.yaml is copied once per user with the user
// as its only subject. It waits until each user may list Foos and get the
// Lease.
func (r *relRig) grantControllerRoles(users ...string) {
	t := r.t
	t.Helper()
	r.createObjects(r.readManifest("namespace.yaml")...)
	r.createObjects(r.readManifest("role.yaml")...)
	manifest := r.readManifest("rbac.yaml")
	r.createObjects(manifest...)
	for _, user := range users {
		subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
		for _, obj := range manifest {
			switch o := obj.(type) {
			case *rbacv1.ClusterRoleBinding:
				b := o.DeepCopy()
				b.Name += "-" + user
				b.Subjects = subjects
				r.createObjects(b)
			case *rbacv1.RoleBinding:
				b := o.DeepCopy()
				b.Name += "-" + user
				b.Subjects = subjects
				r.createObjects(b)
			}
		}
	}
	for _, user := range users {
		cfg, err := r.cp.UserConfig(user)
		require.NoError(t, err)
		r.waitAuthorized(cfg)
	}
}

// waitAuthorized waits until RBAC lets cfg list Foos and Deployments.
func (r *relRig) waitAuthorized(cfg *rest.Config) {
	t := r.t
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	foos, err := fooclientset.NewForConfig(cfg)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := foos.SamplecontrollerV1alpha1().Foos("").List(t.Context(), metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
		_, err = kube.AppsV1().Deployments("").List(t.Context(), metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
	}, waitTimeout, relPoll, "RBAC lets %s in", cfg.Username)
}

// writeKubeconfig writes a kubeconfig for cfg's server, CA and bearer token.
func (r *relRig) writeKubeconfig(cfg *rest.Config, name string) string {
	r.t.Helper()
	path := filepath.Join(r.t.TempDir(), name+".kubeconfig")
	require.NoError(r.t, controlplane.WriteKubeconfig(path, cfg, name))
	return path
}

// userKubeconfig writes a kubeconfig for a static-token user.
func (r *relRig) userKubeconfig(user string) string {
	r.t.Helper()
	cfg, err := r.cp.UserConfig(user)
	require.NoError(r.t, err)
	return r.writeKubeconfig(cfg, user)
}

// createNamespace creates a namespace for a test's Foos.
func (r *relRig) createNamespace(name string) string {
	r.t.Helper()
	_, err := r.kube.CoreV1().Namespaces().Create(r.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	return name
}

// startFoo runs examples/foo with the kubeconfig, fresh ports for its
// endpoints, -v=2 and the extra flags. The process belongs to t: it is
// killed when t ends if it still runs.
func (r *relRig) startFoo(t *testing.T, name, kubeconfig string, extra ...string) *process {
	t.Helper()
	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + healthAddr,
		"-v=2",
	}, extra...)
	p := startProcess(t, name, r.bin, args...)
	p.metricsURL, p.healthURL = "http://"+metricsAddr, "http://"+healthAddr
	return p
}

// relWaitReadyz waits until the process answers /readyz with 200: its
// caches have synced.
func relWaitReadyz(t *testing.T, p *process) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.False(c, p.exited(), "%s exited:\n%s", p.name, p.out.String())
		code, body, err := httpGet(t.Context(), p.healthURL+"/readyz")
		require.NoError(c, err)
		assert.Equal(c, 200, code, "/readyz: %s", body)
	}, waitTimeout, relPoll, "%s is ready", p.name)
}

// relKillHard sends SIGKILL to the process and waits until it is gone.
func relKillHard(t *testing.T, p *process) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

// relTerminate sends SIGTERM and waits for the exit; it fails t unless the
// process exits with status 0 within timeout.
func relTerminate(t *testing.T, p *process, timeout time.Duration) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, exited := p.wait(timeout)
	require.True(t, exited, "%s exits within %s of SIGTERM", p.name, timeout)
	assert.Equal(t, 0, code, "exit code of %s", p.name)
}

// relAssertNoDataRace fails t if a race-detector report is in the output of
// one of the processes.
func relAssertNoDataRace(t *testing.T, procs ...*process) {
	t.Helper()
	for _, p := range procs {
		assert.NotContains(t, p.out.String(), "DATA RACE", "output of %s", p.name)
	}
}

// auditLog parses the audit log as it is now.
func (r *relRig) auditLog() []audit.Event {
	r.t.Helper()
	events, err := r.cp.AuditEvents()
	require.NoError(r.t, err)
	return events
}

// relNewFoo returns a Foo asking for a Deployment.
func relNewFoo(name, deployment string, replicas int32) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: deployment, Replicas: ptr.To(replicas)},
	}
}

// relFooConverged reports whether the controller has acted on the Foo's
// current generation and reports its Deployment Ready with every replica
// available.
func relFooConverged(f *samplev1alpha1.Foo) bool {
	cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
	return f.Status.ObservedGeneration == f.Generation && cond != nil &&
		cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == f.Generation &&
		f.Spec.Replicas != nil && f.Status.AvailableReplicas == *f.Spec.Replicas
}

// relFooRefused reports whether the Foo's current generation carries
// Ready=False with the reason.
func relFooRefused(f *samplev1alpha1.Foo, reason string) bool {
	cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
	return f.Status.ObservedGeneration == f.Generation && cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == reason && cond.ObservedGeneration == f.Generation
}

// relControlledBy reports whether the Deployment's controller is the Foo.
func relControlledBy(d *appsv1.Deployment, f *samplev1alpha1.Foo) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == f.UID && ref.Kind == "Foo" && ref.APIVersion == samplev1alpha1.SchemeGroupVersion.String()
}

// waitFooConverged waits until the Foo converged and its Deployment is
// controlled by it with the Foo's replicas; it returns both.
func (r *relRig) waitFooConverged(t *testing.T, ns, name string, timeout time.Duration) (*samplev1alpha1.Foo, *appsv1.Deployment) {
	t.Helper()
	var f *samplev1alpha1.Foo
	var d *appsv1.Deployment
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		f, err = r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		require.True(c, relFooConverged(f), "Foo %s converged: %+v", name, f.Status)
		d, err = r.kube.AppsV1().Deployments(ns).Get(t.Context(), f.Spec.DeploymentName, metav1.GetOptions{})
		require.NoError(c, err)
		assert.True(c, relControlledBy(d, f), "Deployment %s controlled by Foo %s", d.Name, name)
		assert.Equal(c, *f.Spec.Replicas, ptr.Deref(d.Spec.Replicas, -1), "Deployment replicas")
		assert.Equal(c, d.Status.AvailableReplicas, f.Status.AvailableReplicas, "status mirrors the Deployment")
	}, timeout, relPoll, "Foo %s/%s converges", ns, name)
	return f, d
}

// waitFooRefused waits until the Foo reports Ready=False with the reason
// and returns it.
func (r *relRig) waitFooRefused(t *testing.T, ns, name, reason string) *samplev1alpha1.Foo {
	t.Helper()
	var f *samplev1alpha1.Foo
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		f, err = r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.True(c, relFooRefused(f, reason), "Foo %s: Ready=False %s wanted, status %+v", name, reason, f.Status)
	}, waitTimeout, relPoll, "Foo %s/%s reports %s", ns, name, reason)
	return f
}

// fooEvents lists the events about a Foo of one type ("" for all).
func (r *relRig) fooEvents(t require.TestingT, ctx context.Context, ns, name, eventType string) []corev1.Event {
	sel := fields.Set{"involvedObject.kind": "Foo", "involvedObject.name": name}
	if eventType != "" {
		sel["type"] = eventType
	}
	list, err := r.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	require.NoError(t, err)
	return list.Items
}

// waitWarning waits for a Warning event about the Foo with the reason and
// message, and returns it.
func (r *relRig) waitWarning(t *testing.T, ns string, f *samplev1alpha1.Foo, reason, message string) corev1.Event {
	t.Helper()
	var got corev1.Event
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, e := range r.fooEvents(c, t.Context(), ns, f.Name, corev1.EventTypeWarning) {
			if e.Reason == reason && e.InvolvedObject.UID == f.UID {
				assert.Equal(c, message, e.Message)
				got = e
				return
			}
		}
		c.Errorf("no Warning %s about Foo %s yet", reason, f.Name)
	}, waitTimeout, relPoll, "Warning %s about Foo %s/%s", reason, ns, f.Name)
	return got
}

// relEventsAbout selects audit events of requests on core/v1 Events whose
// name the event recorder derived from the Foo's name ("<foo>.<suffix>").
func relEventsAbout(fooName string) audit.Filter {
	return func(e audit.Event) bool {
		return e.APIGroup == "" && e.Resource == "events" && strings.HasPrefix(e.Name, fooName+".")
	}
}

// relByUserAgent selects requests whose user agent starts with prefix.
func relByUserAgent(prefix string) audit.Filter {
	return func(e audit.Event) bool { return strings.HasPrefix(e.UserAgent, prefix) }
}

// relFmtDurations renders durations rounded to milliseconds.
func relFmtDurations(ds []time.Duration) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, d.Round(time.Millisecond).String())
	}
	return fmt.Sprintf("[%s]", strings.Join(parts, " "))
}
