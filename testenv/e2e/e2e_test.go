package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

const (
	// The controller runs as the ServiceAccount of examples/foo/deploy.
	controllerNamespace = "foo-system"
	controllerSA        = "foo-controller"
	controllerUser      = "system:serviceaccount:" + controllerNamespace + ":" + controllerSA
	// gcUser is the garbage collector of kube-controller-manager.
	gcUser = "system:serviceaccount:kube-system:generic-garbage-collector"

	// resync is the controller's --resync: short, so an idle period with
	// resyncs fits in the test.
	resync = 3 * time.Second
	// shutdownTimeout is the controller's --shutdown-timeout.
	shutdownTimeout = 10 * time.Second

	// crdHint is what the binary says when the Foo CRD is missing.
	crdHint = "install the Foo CRD with: kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml"

	waitTimeout = 60 * time.Second
	pollEvery   = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of client-go's shared transports.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.Cleanup(func(int) { removeBinaries() }),
	)
}

// suite is the state the steps of TestFooController share.
type suite struct {
	t          *testing.T
	cp         *controlplane.ControlPlane
	root       string
	bin        string
	kubeconfig string
	kube       kubernetes.Interface
	foos       fooclientset.Interface
	// ns holds the test's Foos.
	ns string
	// ctrl is the controller process the steps share.
	ctrl *process
}

// TestFooController runs the examples/foo binary against a full control
// plane. The steps depend on each other and run in order; the first one to
// fail ends the test.
func TestFooController(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "foo", true)
	cp := controlplane.StartT(t, controlplane.Options{
		Size: controlplane.Full,
		CRDs: []string{filepath.Join(root, "foo", "crd")},
	})
	bin := waitBinary()
	t.Logf("control plane and binary ready after %s", time.Since(begin).Round(time.Millisecond))

	s := &suite{t: t, cp: cp, root: root, bin: bin}
	s.setUp()

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"it starts and becomes ready", s.startController},
		{"example-foo.yaml gets a Deployment with Ready pods", s.exampleFoo},
		{"an idle resync writes nothing", s.idleResync},
		{"scaling the Foo scales the Deployment", s.scale},
		{"a foreign Deployment is left untouched", s.foreignDeployment},
		{"deleting the Foo garbage-collects the Deployment", s.garbageCollection},
		{"SIGTERM stops it gracefully", s.sigterm},
		{"without the CRD it exits 1 and says how to install it", s.missingCRD},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			t.FailNow()
		}
	}

	forbidden := s.controllerRequests(audit.ByCode(403))
	assert.Empty(t, audit.Lines(forbidden), "the RBAC of examples/foo/deploy allows every request of the controller")
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// setUp applies the controller's namespace, ServiceAccount and RBAC from
// examples/foo/deploy, writes a kubeconfig for the ServiceAccount and
// creates the namespace for the test's Foos.
func (s *suite) setUp() {
	t := s.t
	ctx := t.Context()
	var err error
	s.kube, err = kubernetes.NewForConfig(s.cp.Config())
	require.NoError(t, err)
	s.foos, err = fooclientset.NewForConfig(s.cp.Config())
	require.NoError(t, err)

	for _, file := range []string{"namespace.yaml", "serviceaccount.yaml", "role.yaml", "rbac.yaml"} {
		s.apply(filepath.Join(s.root, "examples", "foo", "deploy", file))
	}
	cfg, err := s.cp.ServiceAccountConfig(ctx, controllerNamespace, controllerSA)
	require.NoError(t, err)
	asController, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := asController.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
	}, waitTimeout, pollEvery, "the controller's RBAC takes effect")

	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(s.kubeconfig, cfg, controllerSA))

	ns, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	s.ns = ns.Name
}

// apply creates the objects of a manifest file (see controlplane.CreateObjects
// for the kinds it knows).
func (s *suite) apply(path string) {
	objs, err := controlplane.ReadObjects(path)
	require.NoError(s.t, err)
	require.NoError(s.t, controlplane.CreateObjects(s.t.Context(), s.kube, objs...), "%s", path)
}

// args are the controller's command-line flags, with fresh ports.
func (s *suite) args(t *testing.T) []string {
	return []string{
		"--kubeconfig=" + s.kubeconfig,
		"--metrics-bind-address=" + freeAddress(t),
		"--health-probe-bind-address=" + freeAddress(t),
		"--resync=" + resync.String(),
		"--shutdown-timeout=" + shutdownTimeout.String(),
		"--workers=2",
		"-v=2",
	}
}

func (s *suite) missingCRD(t *testing.T) {
	ctx := t.Context()
	ext, err := apiextensionsclient.NewForConfig(s.cp.Config())
	require.NoError(t, err)
	require.NoError(t, ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := s.kube.Discovery().ServerResourcesForGroupVersion(samplev1alpha1.SchemeGroupVersion.String())
		assert.True(c, apierrors.IsNotFound(err), "want NotFound, got %v", err)
	}, waitTimeout, pollEvery, "the Foo API is no longer served")

	p := startProcess(t, "foo without the CRD", s.bin, s.args(t)...)
	code, exited := p.wait(30 * time.Second)
	require.True(t, exited, "the binary must exit, not wait for the CRD")
	out := p.out.String()
	assert.Equal(t, 1, code, "exit code; output:\n%s", out)
	assert.Contains(t, out, crdHint)
	assert.NotContains(t, out, "goroutine ", "no stack trace")
}

func (s *suite) startController(t *testing.T) {
	args := s.args(t)
	// The process outlives this step: it belongs to the whole test.
	s.ctrl = startProcess(s.t, "foo controller", s.bin, args...)
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
			s.ctrl.metricsURL = "http://" + v
		}
		if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			s.ctrl.healthURL = "http://" + v
		}
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.False(c, s.ctrl.exited(), "the controller exited")
		code, body, err := httpGet(t.Context(), s.ctrl.healthURL+"/readyz")
		require.NoError(c, err)
		assert.Equal(c, 200, code, "/readyz: %s", body)
	}, waitTimeout, pollEvery, "/readyz turns 200 once the caches synced")
	code, _, err := httpGet(t.Context(), s.ctrl.healthURL+"/healthz")
	require.NoError(t, err)
	assert.Equal(t, 200, code, "/healthz")
}

// readExampleFoo parses examples/foo/example-foo.yaml as it is.
func (s *suite) readExampleFoo(t *testing.T) *samplev1alpha1.Foo {
	data, err := os.ReadFile(filepath.Join(s.root, "examples", "foo", "example-foo.yaml"))
	require.NoError(t, err)
	f := &samplev1alpha1.Foo{}
	require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(f))
	require.Equal(t, "Foo", f.Kind)
	require.Equal(t, samplev1alpha1.SchemeGroupVersion.String(), f.APIVersion)
	return f
}

func (s *suite) exampleFoo(t *testing.T) {
	ctx := t.Context()
	created := time.Now()
	f, err := s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Create(ctx, s.readExampleFoo(t), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotNil(t, f.Spec.Replicas)

	d := s.waitDeployment(t, f.Spec.DeploymentName, func(c *assert.CollectT, d *appsv1.Deployment) {
		ref := metav1.GetControllerOf(d)
		if assert.NotNil(c, ref, "controller owner reference") {
			assert.Equal(c, f.UID, ref.UID)
			assert.Equal(c, "Foo", ref.Kind)
		}
		assert.Equal(c, *f.Spec.Replicas, *d.Spec.Replicas)
	})
	s.waitReadyPods(t, d, *f.Spec.Replicas)
	s.waitFooReady(t, f.Name, *f.Spec.Replicas)

	s.waitQuiet(t, f.Name)
	writes := audit.Select(s.auditEvents(t), audit.ByUser(controllerUser), audit.Writes(), audit.Since(created))
	t.Logf("first sync of %s (%d replica): %d write requests by the controller: %s",
		f.Name, *f.Spec.Replicas, len(writes), audit.FormatTally(audit.Tally(writes)))
	assert.Equal(t, 1, audit.Count(writes, audit.Succeeded(), audit.ByResource("apps", "deployments"), audit.ByVerb("create")))
	assert.Zero(t, audit.Count(writes, audit.ByResource("apps", "deployments"), audit.ByVerb("update", "patch", "delete")), "the new Deployment is not rewritten")
	assert.Zero(t, audit.Count(writes, audit.ByResource("", "events")), "a new Foo is no event: its status says it all")

	m := s.metrics(t)
	total, found := metricSum(m, "controller_runtime_reconcile_total", map[string]string{"controller": foo.ControllerName})
	assert.True(t, found, "controller_runtime_reconcile_total for %s in /metrics", foo.ControllerName)
	assert.Positive(t, total)
	success, _ := metricSum(m, "controller_runtime_reconcile_total", map[string]string{"controller": foo.ControllerName, "result": "success"})
	assert.Positive(t, success)
}

func (s *suite) idleResync(t *testing.T) {
	s.waitQuiet(t, "example-foo")
	idleStart := time.Now()
	before := s.reconciles(t)
	// One full resync period and then some, during which resyncs
	// reconcile again.
	require.Eventually(t, func() bool {
		return time.Since(idleStart) > resync+resync/2 && s.reconciles(t) >= before+2
	}, waitTimeout, pollEvery, "resyncs reconcile the Foo again")
	writes := audit.Select(s.auditEvents(t), audit.ByUser(controllerUser), audit.Writes(), audit.Since(idleStart))
	t.Logf("idle for %s: %.0f reconciles, %d write requests by the controller",
		time.Since(idleStart).Round(time.Millisecond), s.reconciles(t)-before, len(writes))
	assert.Empty(t, audit.Lines(writes), "an idle resync writes nothing")
}

func (s *suite) scale(t *testing.T) {
	ctx := t.Context()
	rest := s.foos.SamplecontrollerV1alpha1().RESTClient()
	raw, err := rest.Get().Namespace(s.ns).Resource("foos").Name("example-foo").SubResource("scale").DoRaw(ctx)
	require.NoError(t, err, "%s", raw)
	var sc autoscalingv1.Scale
	require.NoError(t, json.Unmarshal(raw, &sc))
	assert.Equal(t, int32(1), sc.Status.Replicas)
	sc.Spec.Replicas = 3
	body, err := json.Marshal(&sc)
	require.NoError(t, err)
	raw, err = rest.Put().Namespace(s.ns).Resource("foos").Name("example-foo").SubResource("scale").Body(body).DoRaw(ctx)
	require.NoError(t, err, "%s", raw)

	d := s.waitDeployment(t, "example-foo", func(c *assert.CollectT, d *appsv1.Deployment) {
		assert.Equal(c, int32(3), *d.Spec.Replicas)
	})
	s.waitReadyPods(t, d, 3)
	s.waitFooReady(t, "example-foo", 3)
	raw, err = rest.Get().Namespace(s.ns).Resource("foos").Name("example-foo").SubResource("scale").DoRaw(ctx)
	require.NoError(t, err, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &sc))
	assert.Equal(t, int32(3), sc.Spec.Replicas)
	assert.Equal(t, int32(3), sc.Status.Replicas)
}

func (s *suite) foreignDeployment(t *testing.T) {
	ctx := t.Context()
	podLabels := map[string]string{"app": "foreign"}
	_, err := s.kube.AppsV1().Deployments(s.ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/foreign:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Wait until the deployment controller is done with it, so that nothing
	// but a Foo controller's mistake could change it from here on.
	theirs := s.waitDeployment(t, "foreign", func(c *assert.CollectT, d *appsv1.Deployment) {
		assert.Equal(c, d.Generation, d.Status.ObservedGeneration)
		assert.Equal(c, int32(1), d.Status.AvailableReplicas)
		progressing := deploymentCondition(d, appsv1.DeploymentProgressing)
		if assert.NotNil(c, progressing) {
			assert.Equal(c, "NewReplicaSetAvailable", progressing.Reason)
		}
	})

	claimed := time.Now()
	claimer, err := s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Create(ctx, &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "claimer"},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: "foreign", Replicas: ptr.To[int32](2)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	wantMsg := fmt.Sprintf(foo.MessageResourceExists, "foreign")
	// The refusal is reported once: the resyncs (every 3s here) do not
	// repeat it.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := s.kube.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Foo", "involvedObject.name": "claimer", "type": corev1.EventTypeWarning}.String(),
		})
		require.NoError(c, err)
		if assert.Len(c, list.Items, 1) {
			e := list.Items[0]
			assert.Equal(c, samplev1alpha1.ReasonErrResourceExists, e.Reason)
			assert.Equal(c, wantMsg, e.Message)
			assert.Equal(c, claimer.UID, e.InvolvedObject.UID)
			assert.Equal(c, int32(1), e.Count, "reported once")
		}
	}, waitTimeout, pollEvery, "Warning event %s", samplev1alpha1.ReasonErrResourceExists)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		f, err := s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Get(ctx, "claimer", metav1.GetOptions{})
		require.NoError(c, err)
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonErrResourceExists, cond.Reason)
		}
	}, waitTimeout, pollEvery, "the Foo reports the conflict")

	now, err := s.kube.AppsV1().Deployments(s.ns).Get(ctx, "foreign", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, theirs.ResourceVersion, now.ResourceVersion, "resourceVersion")
	assert.Equal(t, theirs.Generation, now.Generation, "generation")
	assert.Equal(t, theirs.Spec, now.Spec)
	assert.Empty(t, now.OwnerReferences)
	events := s.auditEvents(t)
	assert.Empty(t, audit.Lines(audit.Select(events, audit.ByUser(controllerUser), audit.Writes(), audit.ByResource("apps", "deployments"), audit.ByObject(s.ns, "foreign"))),
		"the controller never writes the foreign Deployment")
	assert.Empty(t, audit.Lines(audit.Select(events, audit.Writes(), audit.ByResource("apps", "deployments"), audit.ByObject(s.ns, "foreign"), audit.Since(claimed))),
		"nobody writes it once the Foo exists")

	// The foreign Deployment goes: the Deployment watch wakes the Foo up,
	// and it gets its own.
	require.NoError(t, s.kube.AppsV1().Deployments(s.ns).Delete(ctx, "foreign", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := s.kube.AppsV1().Deployments(s.ns).Get(ctx, "foreign", metav1.GetOptions{})
		require.NoError(c, err)
		assert.True(c, metav1.IsControlledBy(d, claimer), "controlled by the claimer")
	}, waitTimeout, pollEvery, "the Foo creates its Deployment once the name is free")
	require.NoError(t, s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Delete(ctx, "claimer", metav1.DeleteOptions{}))
}

func (s *suite) garbageCollection(t *testing.T) {
	ctx := t.Context()
	d, err := s.kube.AppsV1().Deployments(s.ns).Get(ctx, "example-foo", metav1.GetOptions{})
	require.NoError(t, err)
	deleted := time.Now()
	require.NoError(t, s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Delete(ctx, "example-foo", metav1.DeleteOptions{}))
	selector := labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := s.kube.AppsV1().Deployments(s.ns).Get(ctx, "example-foo", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "Deployment: want NotFound, got %v", err)
		pods, err := s.kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		require.NoError(c, err)
		assert.Empty(c, pods.Items, "pods")
	}, waitTimeout, pollEvery, "the Deployment and its pods are garbage-collected")

	events := s.auditEvents(t)
	onDeployment := []audit.Filter{audit.ByVerb("delete"), audit.ByResource("apps", "deployments"), audit.ByObject(s.ns, "example-foo"), audit.Since(deleted)}
	// The garbage collector may send its delete again while the first one
	// is still being carried out (a loaded API server answers 200 to both).
	assert.Positive(t, audit.Count(events, append(onDeployment, audit.ByUser(gcUser), audit.Succeeded())...), "deleted by the garbage collector")
	assert.Zero(t, audit.Count(events, append(onDeployment, audit.ByUser(controllerUser))...), "not by the controller")
}

func (s *suite) sigterm(t *testing.T) {
	require.False(t, s.ctrl.exited(), "the controller still runs")
	require.NoError(t, s.ctrl.cmd.Process.Signal(syscall.SIGTERM))
	code, exited := s.ctrl.wait(shutdownTimeout + 5*time.Second)
	require.True(t, exited, "the controller exits within the shutdown timeout")
	assert.Equal(t, 0, code, "exit code")
	out := s.ctrl.out.String()
	assert.Contains(t, out, "Shutting down gracefully")
	assert.NotContains(t, out, "DATA RACE")
}

// waitDeployment waits until the Deployment exists and passes check.
func (s *suite) waitDeployment(t *testing.T, name string, check func(*assert.CollectT, *appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		d, err = s.kube.AppsV1().Deployments(s.ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		check(c, d)
	}, waitTimeout, pollEvery, "Deployment %s/%s", s.ns, name)
	return d
}

// waitReadyPods waits until the Deployment runs n Ready pods on the fake
// node and reports them available.
func (s *suite) waitReadyPods(t *testing.T, d *appsv1.Deployment, n int32) {
	t.Helper()
	selector := labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := s.kube.CoreV1().Pods(s.ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		require.NoError(c, err)
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName == controlplane.NodeName && podReady(&p) {
				ready++
			}
		}
		assert.Equal(c, int(n), ready, "Ready pods")
		cur, err := s.kube.AppsV1().Deployments(s.ns).Get(t.Context(), d.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, n, cur.Status.AvailableReplicas, "Deployment availableReplicas")
	}, waitTimeout, pollEvery, "%d Ready pods of Deployment %s", n, d.Name)
}

// waitFooReady waits until the Foo reports its current generation Ready
// with n available replicas.
func (s *suite) waitFooReady(t *testing.T, name string, n int32) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		f, err := s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, n, f.Status.AvailableReplicas, "availableReplicas")
		assert.Equal(c, f.Generation, f.Status.ObservedGeneration, "observedGeneration")
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond, "Ready condition") {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonDeploymentReady, cond.Reason)
		}
	}, waitTimeout, pollEvery, "Foo %s Ready with %d available", name, n)
}

// waitQuiet waits until the controller has nothing left to do: the Foo is
// Ready, the queue is empty, no reconcile runs, and the reconcile count has
// not moved for a second (a reconcile triggered by the controller's own
// last write has run).
func (s *suite) waitQuiet(t *testing.T, fooName string) {
	t.Helper()
	s.waitFooReady(t, fooName, s.fooReplicas(t, fooName))
	var last float64
	var stableSince time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := s.metrics(t)
		depth, found := metricSum(m, "workqueue_depth", map[string]string{"controller": foo.ControllerName})
		assert.True(c, found, "workqueue_depth")
		assert.Zero(c, depth, "queued keys")
		active, found := metricSum(m, "controller_runtime_active_workers", map[string]string{"controller": foo.ControllerName})
		assert.True(c, found, "controller_runtime_active_workers")
		assert.Zero(c, active, "reconciles in progress")
		reconciles, _ := metricSum(m, "controller_runtime_reconcile_total", map[string]string{"controller": foo.ControllerName})
		if reconciles != last || stableSince.IsZero() {
			last, stableSince = reconciles, time.Now()
		}
		assert.GreaterOrEqual(c, time.Since(stableSince), time.Second, "no reconcile for a second")
	}, waitTimeout, pollEvery, "the controller settles")
}

func (s *suite) fooReplicas(t *testing.T, name string) int32 {
	t.Helper()
	f, err := s.foos.SamplecontrollerV1alpha1().Foos(s.ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return *f.Spec.Replicas
}

// metrics returns the controller's /metrics page.
func (s *suite) metrics(t *testing.T) string {
	t.Helper()
	code, body, err := httpGet(t.Context(), s.ctrl.metricsURL+"/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	return body
}

// reconciles is the controller's controller_runtime_reconcile_total.
func (s *suite) reconciles(t *testing.T) float64 {
	t.Helper()
	n, _ := metricSum(s.metrics(t), "controller_runtime_reconcile_total", map[string]string{"controller": foo.ControllerName})
	return n
}

func (s *suite) auditEvents(t *testing.T) []audit.Event {
	t.Helper()
	events, err := s.cp.AuditEvents()
	require.NoError(t, err)
	return events
}

// controllerRequests returns every request of the controller's user.
func (s *suite) controllerRequests(filters ...audit.Filter) []audit.Event {
	return audit.Select(s.auditEvents(s.t), append([]audit.Filter{audit.ByUser(controllerUser)}, filters...)...)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}
