package foo_test

// The tests in this file drive the whole controller (informers, queue,
// workers) over fake clientsets whose requests fail on purpose. Once the
// faults clear the controller converges; while they last it retries on the
// queue's backoff schedule, never in a hot loop.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	fooinformersv1alpha1 "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

var (
	fooResource        = samplev1alpha1.SchemeGroupVersion.WithResource("foos")
	deploymentResource = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// harness runs a whole Foo controller over fake clientsets, the way a
// binary runs it: informer factories, NewController, Run.
type harness struct {
	kube     *kubefake.Clientset
	foos     *foofake.Clientset
	recorder *eventstest.Recorder
	metrics  *countingMetrics
	// logs holds what the controller logged through its context.
	logs ktesting.Buffer
	// fooInformer and deployInformer record the event handlers the
	// controller registers, so that tests can call them directly.
	fooInformer, deployInformer *capturingInformer
	ctrl                        *foo.Controller
	// api is the strict API server of both clientsets (nil with
	// plainVersions): reactors write through api.Tracker.
	api *reconciletest.StrictAPI
}

// harnessOptions configures startHarness.
type harnessOptions struct {
	opts []queue.Option
	// before runs once the clientsets exist and before anything lists or
	// watches them: the place to add reactors.
	before func(h *harness)
	// deploymentHook, if set, runs before every Deployment create the
	// controller sends, outside the fake clientset's lock and with the
	// request's context; an error fails the create.
	deploymentHook func(ctx context.Context, d *appsv1.Deployment) error
	// verbosity of the controller's logger; default 4.
	verbosity int
	// plainVersions leaves the fake clientsets as client-go makes them,
	// for tests that drive the tracker's watches directly; by default they
	// keep resourceVersions as an API server does (Strict).
	plainVersions bool
}

// startHarness starts a controller over fake clientsets holding objects and
// waits until it has synced. Everything it started is stopped, and Run must
// have returned, when the test ends.
func startHarness(t *testing.T, ho harnessOptions, objects ...runtime.Object) *harness {
	t.Helper()
	var kubeObjs, fooObjs []runtime.Object
	for _, o := range objects {
		// Every stored object has a resourceVersion on an API server, so
		// that Strict answers an update from a stale cache with 409.
		if m, err := meta.Accessor(o); err == nil && m.GetResourceVersion() == "" && !ho.plainVersions {
			m.SetResourceVersion("1")
		}
		if _, isFoo := o.(*samplev1alpha1.Foo); isFoo {
			fooObjs = append(fooObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	h := &harness{
		kube:     kubefake.NewClientset(kubeObjs...),
		foos:     foofake.NewClientset(fooObjs...),
		recorder: eventstest.NewRecorder(),
		metrics:  &countingMetrics{},
	}
	if !ho.plainVersions {
		// As on an API server, a write from a stale cache gets a 409
		// instead of overwriting newer state (a status set by the test).
		h.api = reconciletest.Strict(h.kube, h.foos)
	}
	if ho.before != nil {
		ho.before(h)
	}
	if ho.verbosity == 0 {
		ho.verbosity = 4
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(ho.verbosity)))
	h.logs = logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))

	kubeInformers := kubeinformers.NewSharedInformerFactory(h.kube, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(h.foos, 0)
	deployments := kubeInformers.Apps().V1().Deployments()
	foos := fooInformers.Samplecontroller().V1alpha1().Foos()
	h.deployInformer = &capturingInformer{SharedIndexInformer: deployments.Informer()}
	h.fooInformer = &capturingInformer{SharedIndexInformer: foos.Informer()}

	opts := append([]queue.Option{queue.WithMetrics(h.metrics)}, ho.opts...)
	var kube kubernetes.Interface = h.kube
	if ho.deploymentHook != nil {
		kube = hookedKube{Interface: h.kube, beforeCreate: ho.deploymentHook}
	}
	ctrl, err := foo.NewController(ctx, kube, h.foos,
		deploymentInformer{TypedDeploymentInformer: deployments, inf: h.deployInformer},
		fooInformer{TypedFooInformer: foos, inf: h.fooInformer}, h.recorder, opts...)
	require.NoError(t, err)
	h.ctrl = ctrl
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "Run")
		case <-time.After(eventually):
			t.Error("Run did not return")
		}
		kubeInformers.Shutdown()
		fooInformers.Shutdown()
	})
	require.Eventually(t, ctrl.HasSynced, eventually, time.Millisecond, "the controller syncs")
	return h
}

// capturingInformer records the event handlers added to an informer.
type capturingInformer struct {
	cache.SharedIndexInformer
	mu       sync.Mutex
	handlers []cache.ResourceEventHandler
}

func (c *capturingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	c.record(h)
	return c.SharedIndexInformer.AddEventHandler(h)
}

func (c *capturingInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	c.record(h)
	return c.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resync)
}

func (c *capturingInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	c.record(h)
	return c.SharedIndexInformer.AddEventHandlerWithOptions(h, opts)
}

func (c *capturingInformer) record(h cache.ResourceEventHandler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, h)
}

// handler returns the handlers registered so far as one, which passes
// every event to each of them, and how many there are.
func (c *capturingInformer) handler(t *testing.T) (cache.ResourceEventHandler, int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.handlers, "the controller registers its handlers")
	all := slices.Clone(c.handlers)
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			for _, h := range all {
				h.OnAdd(obj, false)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			for _, h := range all {
				h.OnUpdate(oldObj, newObj)
			}
		},
		DeleteFunc: func(obj any) {
			for _, h := range all {
				h.OnDelete(obj)
			}
		},
	}, len(all)
}

// cached returns the object the informer's cache holds under key, which
// must be there.
func (c *capturingInformer) cached(t *testing.T, key string) any {
	t.Helper()
	obj, exists, err := c.GetStore().GetByKey(key)
	require.NoError(t, err)
	require.True(t, exists, "%s is cached", key)
	return obj
}

// deploymentInformer and fooInformer are a factory's informers whose
// shared informer is inf, a capturingInformer: the typed informers they
// hand out register their handlers through it.
type deploymentInformer struct {
	appsinformers.TypedDeploymentInformer
	inf cache.SharedIndexInformer
}

func (d deploymentInformer) Informer() cache.SharedIndexInformer { return d.inf }

func (d deploymentInformer) TypedInformer() appsinformers.DeploymentIndexInformer {
	return cache.NewTypedSharedIndexInformer[*appsv1.Deployment](d.inf)
}

type fooInformer struct {
	fooinformersv1alpha1.TypedFooInformer
	inf cache.SharedIndexInformer
}

func (f fooInformer) Informer() cache.SharedIndexInformer { return f.inf }

func (f fooInformer) TypedInformer() fooinformersv1alpha1.FooIndexInformer {
	return cache.NewTypedSharedIndexInformer[*samplev1alpha1.Foo](f.inf)
}

// hookedKube is a kube clientset whose Deployment creates call beforeCreate
// first. Unlike a reactor, the hook runs outside the fake's lock, so
// concurrent requests stay concurrent, and it sees the request's context.
type hookedKube struct {
	kubernetes.Interface
	beforeCreate func(ctx context.Context, d *appsv1.Deployment) error
}

func (k hookedKube) AppsV1() appsv1client.AppsV1Interface {
	return hookedApps{AppsV1Interface: k.Interface.AppsV1(), beforeCreate: k.beforeCreate}
}

type hookedApps struct {
	appsv1client.AppsV1Interface
	beforeCreate func(ctx context.Context, d *appsv1.Deployment) error
}

func (a hookedApps) Deployments(namespace string) appsv1client.DeploymentInterface {
	return hookedDeployments{DeploymentInterface: a.AppsV1Interface.Deployments(namespace), beforeCreate: a.beforeCreate}
}

type hookedDeployments struct {
	appsv1client.DeploymentInterface
	beforeCreate func(ctx context.Context, d *appsv1.Deployment) error
}

func (d hookedDeployments) Create(ctx context.Context, dep *appsv1.Deployment, opts metav1.CreateOptions) (*appsv1.Deployment, error) {
	if err := d.beforeCreate(ctx, dep); err != nil {
		return nil, err
	}
	return d.DeploymentInterface.Create(ctx, dep, opts)
}

// getFoo reads a Foo from the fake API.
func (h *harness) getFoo(name string) (*samplev1alpha1.Foo, error) {
	return h.foos.SamplecontrollerV1alpha1().Foos(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// waitDeployment waits until the Foo's Deployment exists and is what the
// controller creates for it, and returns it.
func (h *harness) waitDeployment(t *testing.T, fooName string) *appsv1.Deployment {
	t.Helper()
	var problems []string
	var d *appsv1.Deployment
	ok := assert.Eventually(t, func() bool {
		f, err := h.getFoo(fooName)
		if err != nil {
			problems = []string{err.Error()}
			return false
		}
		d, err = h.kube.AppsV1().Deployments(ns).Get(context.Background(), f.Spec.DeploymentName, metav1.GetOptions{})
		if err != nil {
			problems = []string{err.Error()}
			return false
		}
		problems = deploymentProblems(d, f)
		return len(problems) == 0
	}, eventually, time.Millisecond, "the Deployment of Foo %s is created and correct", fooName)
	if !ok {
		t.Fatalf("Deployment of Foo %s: %v", fooName, problems)
	}
	return d
}

// makeAvailable marks a Deployment as rolled out with all its replicas
// available, as the Deployment controller would.
func (h *harness) makeAvailable(t *testing.T, name string) {
	t.Helper()
	deployments := h.kube.AppsV1().Deployments(ns)
	d, err := deployments.Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	r := ptr.Deref(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r}
	_, err = deployments.UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitReady waits until the Foo's status mirrors a Deployment with
// available replicas, all of them available.
func (h *harness) waitReady(t *testing.T, fooName string, available int32) {
	t.Helper()
	var last *samplev1alpha1.Foo
	ok := assert.Eventually(t, func() bool {
		f, err := h.getFoo(fooName)
		if err != nil {
			return false
		}
		last = f
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		return f.Status.ObservedGeneration == f.Generation && f.Status.AvailableReplicas == available &&
			cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == samplev1alpha1.ReasonDeploymentReady &&
			cond.ObservedGeneration == f.Generation
	}, eventually, time.Millisecond, "Foo %s turns Ready with %d available replicas", fooName, available)
	if !ok {
		t.Fatalf("Foo %s status: %+v", fooName, last.Status)
	}
}

// waitCondition waits until the Foo's current generation is reported with
// a Ready condition of the given status and reason, and returns the Foo.
func (h *harness) waitCondition(t *testing.T, fooName string, status metav1.ConditionStatus, reason string) *samplev1alpha1.Foo {
	t.Helper()
	var last *samplev1alpha1.Foo
	ok := assert.Eventually(t, func() bool {
		f, err := h.getFoo(fooName)
		if err != nil {
			return false
		}
		last = f
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		return f.Status.ObservedGeneration == f.Generation && cond != nil && cond.Status == status &&
			cond.Reason == reason && cond.ObservedGeneration == f.Generation
	}, eventually, time.Millisecond, "Foo %s reports Ready=%s (%s)", fooName, status, reason)
	if !ok {
		t.Fatalf("Foo %s status: %+v", fooName, last)
	}
	return last
}

// errorLogs returns the error entries the controller logged with msg.
func (h *harness) errorLogs(msg string) []ktesting.LogEntry {
	var out []ktesting.LogEntry
	for _, e := range h.logs.Data() {
		if e.Type == ktesting.LogError && (msg == "" || e.Message == msg) {
			out = append(out, e)
		}
	}
	return out
}

// deploymentProblems lists how d differs from the Deployment the
// controller creates for f; nil means none.
func deploymentProblems(d *appsv1.Deployment, f *samplev1alpha1.Foo) []string {
	var p []string
	if d.Namespace != f.Namespace || d.Name != f.Spec.DeploymentName {
		p = append(p, fmt.Sprintf("name %s/%s, want %s/%s", d.Namespace, d.Name, f.Namespace, f.Spec.DeploymentName))
	}
	switch ref := metav1.GetControllerOf(d); {
	case ref == nil:
		p = append(p, "no controller reference")
	case ref.UID != f.UID || ref.Name != f.Name || ref.Kind != "Foo" ||
		ref.APIVersion != samplev1alpha1.SchemeGroupVersion.String() || !ptr.Deref(ref.BlockOwnerDeletion, false):
		p = append(p, fmt.Sprintf("controller reference %+v does not name Foo %s (uid %s)", *ref, f.Name, f.UID))
	}
	want := ptr.Deref(f.Spec.Replicas, samplev1alpha1.DefaultReplicas)
	if got := ptr.Deref(d.Spec.Replicas, -1); got != want {
		p = append(p, fmt.Sprintf("replicas %d, want %d", got, want))
	}
	labels := map[string]string{"app": "nginx", "controller": f.Name}
	if d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, labels) {
		p = append(p, fmt.Sprintf("selector %v, want %v", d.Spec.Selector, labels))
	}
	if !maps.Equal(d.Spec.Template.Labels, labels) {
		p = append(p, fmt.Sprintf("pod labels %v, want %v", d.Spec.Template.Labels, labels))
	}
	if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "nginx" || c[0].Image != "nginx:latest" {
		p = append(p, fmt.Sprintf("containers %+v, want one nginx:latest", c))
	}
	return p
}

// injector fails matching requests: the first times of them, or all of
// them when times is negative. It records when each request arrived.
type injector struct {
	err   error
	times int

	mu   sync.Mutex
	hits []time.Time
}

// next records a request and reports whether it must fail.
func (in *injector) next() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hits = append(in.hits, time.Now())
	return in.times < 0 || len(in.hits) <= in.times
}

// reactor fails the requests for subresource ("" for the object itself).
func (in *injector) reactor(subresource string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != subresource {
			return false, nil, nil
		}
		if in.next() {
			return true, nil, in.err
		}
		return false, nil, nil
	}
}

// count returns the number of requests seen.
func (in *injector) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.hits)
}

// offsets returns when each request arrived, relative to the first.
func (in *injector) offsets() []time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]time.Duration, len(in.hits))
	for i, h := range in.hits {
		out[i] = h.Sub(in.hits[0])
	}
	return out
}

// within returns the number of requests that arrived within window of the first.
func (in *injector) within(window time.Duration) int {
	n := 0
	for _, o := range in.offsets() {
		if o <= window {
			n++
		}
	}
	return n
}

// backoffAttempts is the largest number of attempts a key that fails every
// time can make within window under per-key exponential backoff starting at
// base: the retry after the k-th failure waits base·2^(k-1), so attempt k
// (counting from 0) starts no earlier than base·(2^k − 1) after the first.
func backoffAttempts(base, window time.Duration) int {
	n := 0
	for start := time.Duration(0); start <= window; start = 2*start + base {
		n++
	}
	return n
}

func TestBackoffAttempts(t *testing.T) {
	// 0, 5, 15, 35, 75, 155, 315, 635 ms fit in a second; 1275 ms does not.
	assert.Equal(t, 8, backoffAttempts(5*time.Millisecond, time.Second))
	assert.Equal(t, 1, backoffAttempts(5*time.Millisecond, 4*time.Millisecond))
	assert.Equal(t, 2, backoffAttempts(5*time.Millisecond, 5*time.Millisecond))
}

// faultTarget names the requests a fault applies to.
type faultTarget struct {
	foos                        bool // the Foo clientset, else the kube clientset
	verb, resource, subresource string
}

var (
	fooStatusUpdate  = faultTarget{foos: true, verb: "update", resource: "foos", subresource: "status"}
	deploymentCreate = faultTarget{verb: "create", resource: "deployments"}
	deploymentPatch  = faultTarget{verb: "patch", resource: "deployments"}
)

func (ft faultTarget) String() string {
	s := ft.verb + " " + ft.resource
	if ft.subresource != "" {
		s += "/" + ft.subresource
	}
	return s
}

// install adds the injector's reactor for the target.
func (ft faultTarget) install(h *harness, in *injector) {
	if ft.foos {
		h.foos.PrependReactor(ft.verb, ft.resource, in.reactor(ft.subresource))
		return
	}
	h.kube.PrependReactor(ft.verb, ft.resource, in.reactor(ft.subresource))
}

// Errors an API server and client-go return under stress.
var (
	errConflict = apierrors.NewConflict(fooResource.GroupResource(), "example-foo",
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	errDeploymentConflict = apierrors.NewConflict(deploymentResource.GroupResource(), "web",
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	errInternal        = apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	errTooManyRequests = apierrors.NewTooManyRequests("too many requests, please try again later", 1)
	errServerTimeout   = apierrors.NewServerTimeout(deploymentResource.GroupResource(), "create", 1)
	errRequestTimeout  = apierrors.NewTimeoutError("request did not complete within 30s", 1)
	// What client-go returns when the request's context expires while it
	// waits for the client-side rate limiter.
	errClientDeadline = fmt.Errorf("client rate limiter Wait returned an error: %w", context.DeadlineExceeded)
)

// TestFaultMatrix injects each fault a few times, then lets requests
// through: the controller converges (the Deployment exists and is correct,
// the Foo's status mirrors it and turns Ready), without Warning events.
func TestFaultMatrix(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const failures = 3
	web := func() *samplev1alpha1.Foo { return newFoo("example-foo", "web", ptr.To[int32](3)) }
	drifted := func() *appsv1.Deployment { return deploymentFor(web(), "web", 1, 1) }
	tests := []struct {
		name string
		at   faultTarget
		err  error
		// block makes the Deployment create hang until the per-reconcile
		// timeout expires, instead of failing at once with err.
		block bool
		// extra objects; the Foo is always there.
		objects []runtime.Object
	}{
		{name: "409 Conflict on the Foo status update", at: fooStatusUpdate, err: errConflict},
		{name: "429 on the Foo status update", at: fooStatusUpdate, err: errTooManyRequests},
		{name: "request timeout on the Foo status update", at: fooStatusUpdate, err: errRequestTimeout},
		{name: "500 on the Deployment create", at: deploymentCreate, err: errInternal},
		{name: "429 on the Deployment create", at: deploymentCreate, err: errTooManyRequests},
		{name: "server timeout on the Deployment create", at: deploymentCreate, err: errServerTimeout},
		{name: "client-side deadline on the Deployment create", at: deploymentCreate, err: errClientDeadline},
		{name: "Deployment create hangs past the reconcile timeout", at: deploymentCreate, block: true},
		{name: "500 on the Deployment patch", at: deploymentPatch, err: errInternal, objects: []runtime.Object{drifted()}},
		{name: "429 on the Deployment patch", at: deploymentPatch, err: errTooManyRequests, objects: []runtime.Object{drifted()}},
		{name: "409 Conflict on the Deployment patch", at: deploymentPatch, err: errDeploymentConflict, objects: []runtime.Object{drifted()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := &injector{err: tt.err, times: failures}
			ho := harnessOptions{}
			if tt.block {
				ho.opts = append(ho.opts, queue.WithReconcileTimeout(100*time.Millisecond))
				ho.deploymentHook = func(ctx context.Context, _ *appsv1.Deployment) error {
					if in.next() {
						<-ctx.Done()
						return ctx.Err()
					}
					return nil
				}
			} else {
				ho.before = func(h *harness) { tt.at.install(h, in) }
			}
			start := time.Now()
			h := startHarness(t, ho, append([]runtime.Object{web()}, tt.objects...)...)

			h.waitDeployment(t, "example-foo")
			h.makeAvailable(t, "web")
			h.waitReady(t, "example-foo", 3)
			converged := time.Since(start)

			assert.GreaterOrEqual(t, in.count(), failures+1, "%d faults were injected, then a request went through", failures)
			// Each fault failed a reconcile. An injected 409 finds the
			// object on the server as the write found it: not a cache
			// behind, so counted like any failure (and logged quietly).
			assert.GreaterOrEqual(t, h.metrics.errors.Load(), int64(failures), "each fault failed a reconcile")
			assert.Empty(t, h.recorder.Find("Warning", ""), "transient faults raise no Warning event")
			if tt.err != nil && apierrors.IsConflict(tt.err) {
				for _, e := range h.errorLogs("") {
					assert.False(t, apierrors.IsConflict(e.Err), "conflicts are retried quietly, not logged as errors: %v", e.Err)
				}
			}
			t.Logf("%s: %d requests (%d failed), %d reconciles (%d failed); converged in %s",
				tt.at, in.count(), failures, h.metrics.reconciles.Load(), h.metrics.errors.Load(), converged.Round(time.Millisecond))
		})
	}
}

// TestFaultBackoff keeps a fault in place and counts the attempts over a
// fixed window: they follow the default rate limiter's per-key exponential
// schedule (5 ms, doubling), so a failing Foo costs a handful of requests,
// not a hot loop, and it is still retried.
func TestFaultBackoff(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const window = time.Second
	schedule := backoffAttempts(queue.DefaultBaseDelay, window)
	// Fewer attempts than this in the window would mean the key is not
	// being retried: the schedule allows 5 by 75 ms.
	const minAttempts = 4
	tests := []struct {
		name string
		at   faultTarget
		err  error
		// echoes is the number of watch events the failing reconciles
		// cause themselves; each one enqueues the Foo once without
		// backoff, as any change does.
		echoes int
		// wantMsg is the start of the Ready condition's message, if the
		// failure is reported there.
		wantMsg string
	}{
		{name: "500 on the Deployment create", at: deploymentCreate, err: errInternal, echoes: 1, // the status write
			wantMsg: `Creating Deployment "web" failed: Internal error occurred`},
		{name: "429 on the Deployment create", at: deploymentCreate, err: errTooManyRequests, echoes: 1,
			wantMsg: `Creating Deployment "web" failed: too many requests`},
		{name: "server timeout on the Deployment create", at: deploymentCreate, err: errServerTimeout, echoes: 1,
			wantMsg: `Creating Deployment "web" failed: The create operation against deployments.apps could not be completed`},
		{name: "409 Conflict on every Foo status update", at: fooStatusUpdate, err: errConflict, echoes: 1}, // the Deployment create
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := &injector{err: tt.err, times: -1}
			h := startHarness(t, harnessOptions{before: func(h *harness) { tt.at.install(h, in) }},
				newFoo("example-foo", "web", ptr.To[int32](3)))
			require.Eventually(t, func() bool { return in.count() > 0 }, eventually, time.Millisecond, "the first attempt")

			// One slack attempt for an informer that lags behind a write.
			maxAttempts := schedule + tt.echoes + 1
			assert.Never(t, func() bool { return in.within(window) > maxAttempts },
				window+100*time.Millisecond, 10*time.Millisecond, "more attempts than the backoff schedule allows")
			got := in.within(window)
			assert.LessOrEqual(t, got, maxAttempts, "attempts in %s: at most %d by the schedule + %d echoes + 1", window, schedule, tt.echoes)
			assert.GreaterOrEqual(t, got, minAttempts, "the failing Foo is retried")
			t.Logf("%s: %d attempts within %s (schedule allows %d, +%d echoes, +1 slack; at least %d); offsets %v",
				tt.at, got, window, schedule, tt.echoes, minAttempts, roundAll(in.offsets()))

			if tt.wantMsg != "" {
				f := h.waitCondition(t, "example-foo", metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady)
				assert.Contains(t, meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady).Message, tt.wantMsg)
			}
			_, err := h.kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if tt.at == deploymentCreate {
				assert.True(t, apierrors.IsNotFound(err), "no Deployment while creates fail: %v", err)
			}
		})
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// watchControl serves the watches of one resource of a fake clientset from
// its tracker and lets a test close them, as an API server does when a
// watch times out or a connection drops, and refuse the next ones.
type watchControl struct {
	tracker k8stesting.ObjectTracker

	mu        sync.Mutex
	open      []watch.Interface
	served    int
	refused   int
	refuse    int
	refuseErr error
	onRefuse  func()
}

func (w *watchControl) react(a k8stesting.Action) (bool, watch.Interface, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refuse > 0 {
		w.refuse--
		w.refused++
		if w.onRefuse != nil {
			w.onRefuse()
		}
		return true, nil, w.refuseErr
	}
	var opts metav1.ListOptions
	if wa, ok := a.(k8stesting.WatchActionImpl); ok {
		opts = wa.ListOptions
	}
	wi, err := w.tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
	if err != nil {
		return true, nil, err
	}
	w.served++
	w.open = append(w.open, wi)
	return true, wi, nil
}

// closeAll stops every watch served so far and refuses the next n watch
// requests with err, calling onRefuse (under the fake's lock) for each.
func (w *watchControl) closeAll(n int, err error, onRefuse func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refuse, w.refuseErr, w.onRefuse = n, err, onRefuse
	for _, wi := range w.open {
		wi.Stop()
	}
	w.open = nil
}

func (w *watchControl) counts() (served, refused int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.served, w.refused
}

// listCounter counts list requests.
func listCounter(n *atomic.Int32) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		n.Add(1)
		return false, nil, nil
	}
}

// TestWatchClosed closes the informers' watches under the controller.
func TestWatchClosed(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })

	// The Foo watch closes and the next watch request is refused with 429:
	// the informer backs off and watches again from the last
	// resourceVersion, without a relist, and a Foo created while no watch
	// was open is reconciled.
	t.Run("Foo watch: re-watch from the last resourceVersion", func(t *testing.T) {
		t.Parallel()
		var wc *watchControl
		var lists atomic.Int32
		h := startHarness(t, harnessOptions{plainVersions: true, before: func(h *harness) {
			wc = &watchControl{tracker: h.foos.Tracker()}
			h.foos.PrependWatchReactor("foos", wc.react)
			h.foos.PrependReactor("list", "foos", listCounter(&lists))
		}}, newFoo("a", "web-a", ptr.To[int32](2)))
		h.waitDeployment(t, "a")
		h.waitCondition(t, "a", metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady)

		wc.closeAll(1, apierrors.NewTooManyRequests("watch refused", 1), func() {
			// While no watch is open, someone creates a Foo.
			assert.NoError(t, h.foos.Tracker().Create(fooResource, newFoo("b", "web-b", ptr.To[int32](1)), ns))
		})
		h.waitDeployment(t, "b")
		h.makeAvailable(t, "web-b")
		h.waitReady(t, "b", 1)
		served, refused := wc.counts()
		assert.Equal(t, 1, refused)
		assert.GreaterOrEqual(t, served, 2, "the informer watched again")
		assert.Equal(t, int32(1), lists.Load(), "no relist was needed")
		t.Logf("Foo watches: %d served, %d refused; %d lists", served, refused, lists.Load())
	})

	// The Deployment watch closes and the next watch request fails with
	// 500, and meanwhile the Deployment is deleted: the informer relists,
	// delivers the missed delete as a tombstone, and the controller
	// recreates the Deployment.
	t.Run("Deployment watch: relist delivers a tombstone", func(t *testing.T) {
		t.Parallel()
		var wc *watchControl
		var lists atomic.Int32
		h := startHarness(t, harnessOptions{plainVersions: true, before: func(h *harness) {
			wc = &watchControl{tracker: h.kube.Tracker()}
			h.kube.PrependWatchReactor("deployments", wc.react)
			h.kube.PrependReactor("list", "deployments", listCounter(&lists))
		}}, newFoo("a", "web-a", ptr.To[int32](2)))
		var tombstones atomic.Int32
		_, err := h.deployInformer.SharedIndexInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					tombstones.Add(1)
				}
			},
		})
		require.NoError(t, err)
		h.waitDeployment(t, "a")
		h.makeAvailable(t, "web-a")
		h.waitReady(t, "a", 2)
		creates := func() int {
			return len(slices.DeleteFunc(h.kube.Actions(), func(a k8stesting.Action) bool {
				return a.GetVerb() != "create" || a.GetResource() != deploymentResource
			}))
		}
		// Usually one; two when the Foo was reconciled again before the
		// informer saw its new Deployment (the second one fails).
		createsBefore := creates()

		wc.closeAll(1, apierrors.NewInternalError(errors.New("watch cache is reinitializing")), func() {
			// While no watch is open, someone deletes the Deployment.
			assert.NoError(t, h.kube.Tracker().Delete(deploymentResource, ns, "web-a"))
		})
		require.Eventually(t, func() bool { return tombstones.Load() > 0 }, eventually, time.Millisecond,
			"the relist delivers the missed delete as a tombstone")
		h.waitDeployment(t, "a")
		h.makeAvailable(t, "web-a")
		h.waitReady(t, "a", 2)
		served, refused := wc.counts()
		assert.Equal(t, 1, refused)
		assert.GreaterOrEqual(t, served, 2, "the informer watched again")
		assert.GreaterOrEqual(t, lists.Load(), int32(2), "the informer relisted")
		assert.Greater(t, creates(), createsBefore, "the Deployment was recreated")
		t.Logf("Deployment watches: %d served, %d refused; %d lists, %d tombstones, %d creates",
			served, refused, lists.Load(), tombstones.Load(), creates())
	})
}

// TestCreateRacesTheCache creates a Foo's Deployment, then answers the
// create with AlreadyExists, as the API server answers a retried create
// whose first attempt landed: the Deployment exists on the server, and the
// cache shows it now or soon. That is a quiet requeue: no error counted or
// logged, no failure in the Foo's status, and the Foo converges.
func TestCreateRacesTheCache(t *testing.T) {
	var answered atomic.Bool
	ho := harnessOptions{before: func(h *harness) {
		h.kube.PrependReactor("create", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if !answered.CompareAndSwap(false, true) {
				return false, nil, nil
			}
			d := a.(k8stesting.CreateAction).GetObject()
			if err := h.api.Tracker(h.kube).Create(deploymentResource, d, a.GetNamespace()); err != nil {
				return true, nil, err
			} // the create lands
			return true, nil, apierrors.NewAlreadyExists(deploymentResource.GroupResource(), "web")
		})
	}}
	h := startHarness(t, ho, newFoo("example-foo", "web", ptr.To[int32](3)))
	h.waitDeployment(t, "example-foo")
	h.makeAvailable(t, "web")
	h.waitReady(t, "example-foo", 3)

	require.True(t, answered.Load())
	assert.Zero(t, h.metrics.errors.Load(), "the AlreadyExists was the cache behind, not a failure")
	assert.GreaterOrEqual(t, h.metrics.requeues.Load(), int64(1))
	assert.Empty(t, h.errorLogs(""))
	assert.Empty(t, h.recorder.Find("Warning", ""))
	for _, a := range h.foos.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			f := u.GetObject().(*samplev1alpha1.Foo)
			for _, c := range f.Status.Conditions {
				assert.NotContains(t, c.Message, "failed", "the status does not flap to a failure")
			}
		}
	}
}

// TestNoStatusWriteFromItsOwnStaleCache reconciles a Foo again before the
// informer has seen the controller's own status update of it, as happens
// when the Deployment's status changes right after that update: the write
// would fail with a conflict, so it is not sent and the key is requeued
// quietly; once the cache has the update, the status is written.
func TestNoStatusWriteFromItsOwnStaleCache(t *testing.T) {
	web := newFoo("example-foo", "web", ptr.To[int32](1))
	web.ResourceVersion = "1"
	kube := kubefake.NewClientset()
	// The informer lists and watches cached, which is never told about the
	// controller's writes to server until the test copies them over.
	cached, server := foofake.NewClientset(web.DeepCopy()), foofake.NewClientset(web.DeepCopy())
	reconciletest.Strict(kube, cached, server)
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(cached, 0)
	deployments := kubeInformers.Apps().V1().Deployments()
	fooLister := fooInformers.Samplecontroller().V1alpha1().Foos().Lister()
	ctrl, err := foo.NewController(reconciletest.Context(t), kube, server,
		deployments, fooInformers.Samplecontroller().V1alpha1().Foos(), eventstest.NewRecorder())
	require.NoError(t, err)
	reconciletest.StartInformers(t, kubeInformers, fooInformers)
	key := cache.ObjectName{Namespace: ns, Name: "example-foo"}
	reconcileFoo := func() reconciletest.Outcome {
		return reconciletest.Run(t, reconcile.Reconciler[cache.ObjectName](ctrl), key, &kube.Fake, &server.Fake)
	}

	out := reconcileFoo()
	require.NoError(t, out.Err)
	require.Equal(t, []string{"create apps/v1/deployments default/web", "update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"},
		reconciletest.Describe(out.Writes))

	// The Deployment becomes available; the cache still has the Foo as it
	// was before the status update.
	d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	_, err = kube.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := deployments.Lister().Deployments(ns).Get("web")
		return err == nil && d.Status.AvailableReplicas == 1
	}, eventually, time.Millisecond, "the Deployment's cache sees it available")
	out = reconcileFoo()
	require.ErrorIs(t, out.Err, reconcile.ErrStaleCache, "requeued quietly until the cache catches up")
	assert.Empty(t, reconciletest.Describe(out.Writes), "no write that would meet a conflict")

	// The cache catches up with the status update; now the status is
	// written, and succeeds.
	current, err := server.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), "example-foo", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, cached.Tracker().Update(fooResource, current, ns))
	require.Eventually(t, func() bool {
		f, err := fooLister.Foos(ns).Get("example-foo")
		return err == nil && f.ResourceVersion == current.ResourceVersion
	}, eventually, time.Millisecond, "the Foo's cache catches up")
	out = reconcileFoo()
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"}, reconciletest.Describe(out.Writes))
	final, err := server.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), "example-foo", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), final.Status.AvailableReplicas)
}

// TestForeignDeploymentTheCacheDoesNotShow reconciles a Foo whose
// Deployment name is taken by a Deployment its informer never shows, as a
// sharded replica's cache leaves out the children of another replica's
// Foos: the Foo is refused at once, as when the cache shows it (a Warning
// and Ready=False), instead of waiting for a cache that never catches up.
func TestForeignDeploymentTheCacheDoesNotShow(t *testing.T) {
	web := newFoo("example-foo", "web", ptr.To[int32](1))
	web.ResourceVersion = "1"
	other := newFoo("other-foo", "web", ptr.To[int32](1))
	// The server holds the other Foo's Deployment; the informer lists and
	// watches a clientset without it.
	server, cached := kubefake.NewClientset(deploymentFor(other, "web", 1, 1)), kubefake.NewClientset()
	foos := foofake.NewClientset(web)
	reconciletest.Strict(server, cached, foos)
	kubeInformers := kubeinformers.NewSharedInformerFactory(cached, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(foos, 0)
	recorder := eventstest.NewRecorder()
	ctrl, err := foo.NewController(reconciletest.Context(t), server, foos,
		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(), recorder)
	require.NoError(t, err)
	reconciletest.StartInformers(t, kubeInformers, fooInformers)

	out := reconciletest.Run(t, reconcile.Reconciler[cache.ObjectName](ctrl), cache.ObjectName{Namespace: ns, Name: "example-foo"}, &server.Fake, &foos.Fake)
	require.Error(t, out.Err)
	assert.NotErrorIs(t, out.Err, reconcile.ErrStaleCache)
	assert.ErrorIs(t, out.Err, foo.ErrResourceExists)
	assert.ErrorIs(t, out.Err, &reconcile.TerminalError{})
	assert.Len(t, recorder.Find("Warning", samplev1alpha1.ReasonErrResourceExists), 1)
	got, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), "example-foo", metav1.GetOptions{})
	require.NoError(t, err)
	ready := meta.FindStatusCondition(got.Status.Conditions, samplev1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, samplev1alpha1.ReasonErrResourceExists, ready.Reason)
	d, err := server.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, other.UID, d.OwnerReferences[0].UID, "the other Foo's Deployment is left alone")
}
