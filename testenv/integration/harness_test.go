package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// Deadlines of the polls. Everything here happens within milliseconds on an
// idle machine; the generous bounds absorb a loaded one.
const (
	waitTimeout = 30 * time.Second
	pollEvery   = 20 * time.Millisecond
)

// harness is one test's namespace with a Foo controller watching it.
type harness struct {
	t  *testing.T
	ns string
	// kube and foos are admin clients: the test's own requests.
	kube kubernetes.Interface
	foos fooclientset.Interface
	// probe and recorder observe the controller from inside.
	probe    *probe
	recorder *countingRecorder
	// fooLister and deployLister read the controller's caches.
	fooLister    foolisters.FooLister
	deployLister appslisters.DeploymentLister
}

// harnessOptions tune the controller of a harness.
type harnessOptions struct {
	// resync is the informers' resync period; 0 disables resyncs.
	resync time.Duration
	// wrapTransport, if set, wraps the controller's HTTP transport.
	wrapTransport transport.WrapperFunc
}

// newHarness creates a namespace and starts a Foo controller for it, running
// as controllerUser with informers limited to that namespace. The controller
// stops when the test ends; a failed test logs the controller's requests
// from the audit log.
func newHarness(t *testing.T, opts harnessOptions) *harness {
	t.Helper()
	kube, foos := adminClients(t)
	h := &harness{t: t, ns: newNamespace(t), kube: kube, foos: foos, probe: &probe{}}

	cfg, err := cp.UserConfig(controllerUser)
	require.NoError(t, err)
	cfg.UserAgent = "foo-controller-integration"
	cfg.WrapTransport = opts.wrapTransport
	ctrlKube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctrlFoos, err := fooclientset.NewForConfig(cfg)
	require.NoError(t, err)

	// The controller logs through t.Log, shown when a test fails.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(ctrlKube, opts.resync, kubeinformers.WithNamespace(h.ns))
	fooInformers := fooinformers.NewSharedInformerFactoryWithOptions(ctrlFoos, opts.resync, fooinformers.WithNamespace(h.ns))
	rec, err := events.NewRecorder(ctx, ctrlKube, foo.ControllerName, events.WithAddToScheme(samplev1alpha1.AddToScheme))
	require.NoError(t, err)
	h.recorder = &countingRecorder{EventRecorder: rec}
	deployInformer := kubeInformers.Apps().V1().Deployments()
	fooInformer := fooInformers.Samplecontroller().V1alpha1().Foos()
	ctrl, err := foo.NewController(ctx, ctrlKube, ctrlFoos, deployInformer, fooInformer,
		h.recorder, queue.WithWorkers(2), queue.WithMetrics(h.probe))
	require.NoError(t, err)
	h.fooLister, h.deployLister = fooInformer.Lister(), deployInformer.Lister()
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()

	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "controller Run")
		case <-time.After(waitTimeout):
			t.Error("the controller did not stop")
		}
		kubeInformers.Shutdown()
		fooInformers.Shutdown()
		all := h.controllerRequests()
		assert.Empty(t, audit.Lines(audit.Select(all, audit.ByCode(403))), "the shipped ClusterRole must allow every request of the controller")
		if t.Failed() {
			t.Logf("requests of %s in %s:\n%s", controllerUser, h.ns, strings.Join(audit.Lines(all), "\n"))
		}
	})
	require.Eventually(t, ctrl.HasSynced, waitTimeout, pollEvery, "controller caches sync")
	return h
}

// adminClients returns clients acting as the control plane's admin.
func adminClients(t *testing.T) (kubernetes.Interface, fooclientset.Interface) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	foos, err := fooclientset.NewForConfig(cp.Config())
	require.NoError(t, err)
	return kube, foos
}

// newNamespace creates a namespace for one test. It is not deleted: without
// a namespace controller it would stay Terminating anyway, and the control
// plane goes away with the test binary.
func newNamespace(t *testing.T) string {
	t.Helper()
	kube, _ := adminClients(t)
	ns, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "foo-it-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Logf("namespace %s", ns.Name)
	return ns.Name
}

// createFoo creates a Foo as the admin.
func (h *harness) createFoo(name, deploymentName string, replicas *int32) *samplev1alpha1.Foo {
	h.t.Helper()
	f, err := h.foos.SamplecontrollerV1alpha1().Foos(h.ns).Create(h.t.Context(), &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: deploymentName, Replicas: replicas},
	}, metav1.CreateOptions{})
	require.NoError(h.t, err)
	return f
}

func (h *harness) getFoo(name string) *samplev1alpha1.Foo {
	h.t.Helper()
	f, err := h.foos.SamplecontrollerV1alpha1().Foos(h.ns).Get(h.t.Context(), name, metav1.GetOptions{})
	require.NoError(h.t, err)
	return f
}

// updateFoo changes a Foo's spec or metadata as the admin, retrying on
// conflicts.
func (h *harness) updateFoo(name string, change func(*samplev1alpha1.Foo)) *samplev1alpha1.Foo {
	h.t.Helper()
	foos := h.foos.SamplecontrollerV1alpha1().Foos(h.ns)
	return updateWithRetry(h.t, func(ctx context.Context) (*samplev1alpha1.Foo, error) {
		f, err := foos.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		change(f)
		return foos.Update(ctx, f, metav1.UpdateOptions{})
	})
}

// waitDeployment waits until the named Deployment exists and returns it.
func (h *harness) waitDeployment(name string) *appsv1.Deployment {
	h.t.Helper()
	var d *appsv1.Deployment
	require.EventuallyWithT(h.t, func(c *assert.CollectT) {
		var err error
		d, err = h.kube.AppsV1().Deployments(h.ns).Get(h.t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
	}, waitTimeout, pollEvery, "Deployment %s/%s appears", h.ns, name)
	return d
}

// updateDeployment changes a Deployment as the admin, retrying on conflicts.
func (h *harness) updateDeployment(name string, change func(*appsv1.Deployment)) *appsv1.Deployment {
	h.t.Helper()
	deployments := h.kube.AppsV1().Deployments(h.ns)
	return updateWithRetry(h.t, func(ctx context.Context) (*appsv1.Deployment, error) {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		change(d)
		return deployments.Update(ctx, d, metav1.UpdateOptions{})
	})
}

// makeAvailable plays the deployment controller, which an API-server-only
// control plane lacks: it reports every replica of the Deployment's current
// generation as updated, ready and available.
func (h *harness) makeAvailable(name string) *appsv1.Deployment {
	h.t.Helper()
	deployments := h.kube.AppsV1().Deployments(h.ns)
	return updateWithRetry(h.t, func(ctx context.Context) (*appsv1.Deployment, error) {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n,
			UpdatedReplicas:    n,
			ReadyReplicas:      n,
			AvailableReplicas:  n,
		}
		return deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	})
}

// updateWithRetry runs a read-change-write attempt, again on conflicts (as
// retry.RetryOnConflict does), fails the test on any other error, and
// returns what the last write stored.
func updateWithRetry[T any](t *testing.T, attempt func(ctx context.Context) (T, error)) T {
	t.Helper()
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		out, err = attempt(t.Context())
		return err
	})
	require.NoError(t, err)
	return out
}

// waitFooStatus waits until the Foo's status, as stored, passes check.
func (h *harness) waitFooStatus(name, what string, check func(c *assert.CollectT, f *samplev1alpha1.Foo)) *samplev1alpha1.Foo {
	h.t.Helper()
	var f *samplev1alpha1.Foo
	require.EventuallyWithT(h.t, func(c *assert.CollectT) {
		var err error
		f, err = h.foos.SamplecontrollerV1alpha1().Foos(h.ns).Get(h.t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		check(c, f)
	}, waitTimeout, pollEvery, "Foo %s/%s: %s", h.ns, name, what)
	return f
}

// waitReady waits until the Foo reports its current generation Ready with
// the given number of available replicas.
func (h *harness) waitReady(name string, available int32) *samplev1alpha1.Foo {
	h.t.Helper()
	return h.waitFooStatus(name, fmt.Sprintf("Ready with %d available", available), func(c *assert.CollectT, f *samplev1alpha1.Foo) {
		assert.Equal(c, f.Generation, f.Status.ObservedGeneration, "observedGeneration")
		assert.Equal(c, available, f.Status.AvailableReplicas, "availableReplicas")
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond, "Ready condition") {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonDeploymentReady, cond.Reason)
			assert.Equal(c, f.Generation, cond.ObservedGeneration)
		}
	})
}

// waitQuiet waits until the controller has nothing left to do for the Foo:
// no key queued or being reconciled, no retry pending, its caches hold the
// stored versions of the Foo and of the Deployment it names, and every event
// it recorded has reached the API server. After that only a change or a
// resync makes it reconcile again, and only a change may make it write.
func (h *harness) waitQuiet(fooName string) {
	h.t.Helper()
	require.EventuallyWithT(h.t, func(c *assert.CollectT) {
		assert.Zero(c, h.probe.depth.Load(), "queued keys")
		assert.Zero(c, h.probe.active.Load(), "reconciles in progress")
		assert.False(c, h.probe.retryPending.Load(), "a retry is pending")
		stored, err := h.foos.SamplecontrollerV1alpha1().Foos(h.ns).Get(h.t.Context(), fooName, metav1.GetOptions{})
		require.NoError(c, err)
		cached, err := h.fooLister.Foos(h.ns).Get(fooName)
		require.NoError(c, err)
		assert.Equal(c, stored.ResourceVersion, cached.ResourceVersion, "Foo cache is current")
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(h.t.Context(), stored.Spec.DeploymentName, metav1.GetOptions{})
		if err == nil {
			cachedD, err := h.deployLister.Deployments(h.ns).Get(d.Name)
			require.NoError(c, err)
			assert.Equal(c, d.ResourceVersion, cachedD.ResourceVersion, "Deployment cache is current")
		} else {
			require.True(c, apierrors.IsNotFound(err), "%v", err)
		}
		written := len(audit.Select(h.controllerRequests(), audit.Writes(), audit.ByResource("", "events"), audit.Succeeded()))
		assert.GreaterOrEqual(c, written, int(h.recorder.n.Load()), "every recorded event has been written")
	}, waitTimeout, pollEvery, "the controller settles")
}

// controllerRequests returns the requests controllerUser sent in the
// harness's namespace, in the order they completed.
func (h *harness) controllerRequests(filters ...audit.Filter) []audit.Event {
	h.t.Helper()
	all, err := cp.AuditEvents()
	require.NoError(h.t, err)
	return audit.Select(all, append([]audit.Filter{audit.ByUser(controllerUser), audit.ByNamespace(h.ns)}, filters...)...)
}

// controllerWrites returns the write requests of controllerUser in the
// namespace received at or after since.
func (h *harness) controllerWrites(since time.Time, filters ...audit.Filter) []audit.Event {
	h.t.Helper()
	return h.controllerRequests(append([]audit.Filter{audit.Writes(), audit.Since(since)}, filters...)...)
}

// fooEvents lists the core/v1 Events about the Foo.
func (h *harness) fooEvents(fooName string) []corev1.Event {
	h.t.Helper()
	list, err := h.kube.CoreV1().Events(h.ns).List(h.t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "Foo", "involvedObject.name": fooName}.String(),
	})
	require.NoError(h.t, err)
	return list.Items
}

// eventCount sums the counts of the Foo's events with the given type and
// reason (the recorder aggregates repeats into one Event with a count).
func eventCount(evs []corev1.Event, eventType, reason string) int32 {
	var n int32
	for _, e := range evs {
		if e.Type == eventType && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

// probe is a queue.Metrics that lets a test see inside the worker loop.
type probe struct {
	queue.NoopMetrics
	reconciles   atomic.Int64
	errors       atomic.Int64
	requeues     atomic.Int64 // reconciles that met a cache behind the controller's write
	retryPending atomic.Bool
	active       atomic.Int64
	depth        atomic.Int64
}

var _ queue.Metrics = (*probe)(nil)

func (p *probe) ObserveReconcile(_ string, o queue.Observation) {
	p.reconciles.Add(1)
	switch o.Outcome {
	case queue.OutcomeError:
		p.errors.Add(1)
	case queue.OutcomeRequeue:
		p.requeues.Add(1)
	}
	p.retryPending.Store(o.Outcome == queue.OutcomeError && !o.Terminal || o.Outcome == queue.OutcomeRequeue)
}

func (p *probe) AddActiveWorkers(_ string, delta int) { p.active.Add(int64(delta)) }

func (p *probe) NewDepthMetric(string) workqueue.GaugeMetric { return gauge{&p.depth} }

// waitReconciles waits until at least n more reconciles than before have
// finished.
func (p *probe) waitReconciles(t *testing.T, before, n int64, why string) {
	t.Helper()
	require.Eventually(t, func() bool { return p.reconciles.Load() >= before+n }, waitTimeout, pollEvery, why)
}

type gauge struct{ n *atomic.Int64 }

func (g gauge) Inc() { g.n.Add(1) }
func (g gauge) Dec() { g.n.Add(-1) }

// countingRecorder counts the events the controller records before handing
// them to the real recorder.
type countingRecorder struct {
	record.EventRecorder
	n atomic.Int64
}

func (r *countingRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	r.n.Add(1)
	r.EventRecorder.Event(obj, eventType, reason, message)
}

func (r *countingRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.n.Add(1)
	r.EventRecorder.Eventf(obj, eventType, reason, format, args...)
}

func (r *countingRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	r.n.Add(1)
	r.EventRecorder.AnnotatedEventf(obj, annotations, eventType, reason, format, args...)
}
