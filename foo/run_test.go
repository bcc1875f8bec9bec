package foo_test

import (
	"context"
	"fmt"
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
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// countingMetrics counts finished reconciles and the keys added to the
// queue.
type countingMetrics struct {
	queue.NoopMetrics
	reconciles atomic.Int64
	errors     atomic.Int64
	// requeues counts the reconciles that met a cache behind the
	// controller's own write (or a 409): requeued, not failed.
	requeues atomic.Int64
	// adds counts the keys that became due, as the workqueue's adds
	// metric does: a key added while it already waits is not counted.
	adds atomic.Int64
}

// NewAddsMetric counts into m.adds.
func (m *countingMetrics) NewAddsMetric(string) workqueue.CounterMetric { return counter{&m.adds} }

// counter is a workqueue.CounterMetric over an atomic.
type counter struct{ n *atomic.Int64 }

func (c counter) Inc() { c.n.Add(1) }

func (m *countingMetrics) ObserveReconcile(_ string, o queue.Observation) {
	m.reconciles.Add(1)
	switch o.Outcome {
	case queue.OutcomeError:
		m.errors.Add(1)
	case queue.OutcomeRequeue:
		m.requeues.Add(1)
	}
}

const eventually = 20 * time.Second

// TestControllerRun drives the whole controller over fake clientsets: it
// converges, recreates a Deployment deleted behind its back, and then makes
// no write at all across several resyncs.
func TestControllerRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(reconciletest.Context(t))

	kube := kubefake.NewClientset()
	foos := foofake.NewClientset(newFoo("example-foo", "web", ptr.To[int32](2)))
	const resync = 50 * time.Millisecond
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, resync)
	fooInformers := fooinformers.NewSharedInformerFactory(foos, resync)
	// Informer factories shut down only after their stop channel is closed.
	defer func() {
		cancel()
		kubeInformers.Shutdown()
		fooInformers.Shutdown()
	}()
	recorder := eventstest.NewRecorder()
	metrics := &countingMetrics{}
	ctrl, err := foo.NewController(ctx, kube, foos, kubeInformers.Apps().V1().Deployments(),
		fooInformers.Samplecontroller().V1alpha1().Foos(), recorder, queue.WithWorkers(2), queue.WithMetrics(metrics))
	require.NoError(t, err)
	assert.False(t, ctrl.HasSynced())
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	require.Eventually(t, ctrl.HasSynced, eventually, time.Millisecond)

	deployments := kube.AppsV1().Deployments(ns)
	var created *appsv1.Deployment
	require.Eventually(t, func() bool {
		created, err = deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil
	}, eventually, time.Millisecond, "the Deployment is created")
	assert.Equal(t, int32(2), *created.Spec.Replicas)

	// The Deployment becomes available: the Foo's status follows through the
	// Deployment watch and the owner handler.
	makeAvailable := func(d *appsv1.Deployment) {
		d = d.DeepCopy()
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		_, err := deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	makeAvailable(created)
	waitReady := func() {
		require.Eventually(t, func() bool {
			f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "example-foo", metav1.GetOptions{})
			return err == nil && f.Status.AvailableReplicas == 2 && meta.IsStatusConditionTrue(f.Status.Conditions, samplev1alpha1.ConditionReady)
		}, eventually, time.Millisecond, "the Foo turns Ready")
	}
	waitReady()

	// A Deployment deleted by someone else is recreated.
	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	var recreated *appsv1.Deployment
	require.Eventually(t, func() bool {
		recreated, err = deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil
	}, eventually, time.Millisecond, "the deleted Deployment is recreated")
	makeAvailable(recreated)
	waitReady()

	// Idle: several resyncs of both informers cause reconciles but no
	// write. The Foo was Ready before its Deployment was deleted, so its
	// status alone does not tell that the controller is done with the
	// recreated one (a late status write of it may still come): first
	// wait for two reconciles in a row that write nothing.
	quiet := func() bool {
		kube.ClearActions()
		foos.ClearActions()
		before := metrics.reconciles.Load()
		require.Eventually(t, func() bool { return metrics.reconciles.Load() >= before+2 }, eventually, time.Millisecond)
		return len(reconciletest.WriteActions(&kube.Fake, &foos.Fake)) == 0
	}
	for deadline := time.Now().Add(eventually); !quiet(); {
		require.True(t, time.Now().Before(deadline), "the controller never stops writing")
	}
	kube.ClearActions()
	foos.ClearActions()
	recorder.Reset()
	before := metrics.reconciles.Load()
	require.Eventually(t, func() bool { return metrics.reconciles.Load() >= before+6 }, eventually, time.Millisecond,
		"resyncs reconcile the Foo again")
	assert.Empty(t, reconciletest.Describe(reconciletest.WriteActions(&kube.Fake, &foos.Fake)), "an idle resync writes nothing")
	assert.Empty(t, recorder.Events(), "an idle resync records no event")

	// A deleted Foo is dropped quietly.
	require.NoError(t, foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "example-foo", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := fooInformers.Samplecontroller().V1alpha1().Foos().Lister().Foos(ns).Get("example-foo")
		return apierrors.IsNotFound(err)
	}, eventually, time.Millisecond)
	errorsBefore := metrics.errors.Load()
	before = metrics.reconciles.Load()
	require.Eventually(t, func() bool { return metrics.reconciles.Load() >= before+2 }, eventually, time.Millisecond)
	assert.Equal(t, errorsBefore, metrics.errors.Load(), "reconciling a deleted Foo is not an error")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(eventually):
		t.Fatal("Run did not return")
	}
	kubeInformers.Shutdown()
	fooInformers.Shutdown()
}

// A Foo refused because a foreign Deployment has its Deployment's name is
// reported once and not retried, and recovers as soon as that Deployment
// goes: the controller watches Deployments by name. Without resyncs, only
// that watch can tell.
func TestForeignDeploymentRemoved(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(reconciletest.Context(t))

	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	kube := kubefake.NewClientset(foreign)
	foos := foofake.NewClientset(newFoo("example-foo", "web", ptr.To[int32](1)))
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(foos, 0)
	defer func() {
		cancel()
		kubeInformers.Shutdown()
		fooInformers.Shutdown()
	}()
	recorder := eventstest.NewRecorder()
	metrics := &countingMetrics{}
	ctrl, err := foo.NewController(ctx, kube, foos, kubeInformers.Apps().V1().Deployments(),
		fooInformers.Samplecontroller().V1alpha1().Foos(), recorder, queue.WithMetrics(metrics))
	require.NoError(t, err)
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()

	fooClient := foos.SamplecontrollerV1alpha1().Foos(ns)
	require.Eventually(t, func() bool {
		f, err := fooClient.Get(ctx, "example-foo", metav1.GetOptions{})
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		return err == nil && cond != nil && cond.Reason == samplev1alpha1.ReasonErrResourceExists
	}, eventually, time.Millisecond, "the Foo is refused")

	// Changes of the Foo that leave its spec alone reconcile it again; the
	// refusal is not reported again.
	for i := range 5 {
		before := metrics.reconciles.Load()
		f, err := fooClient.Get(ctx, "example-foo", metav1.GetOptions{})
		require.NoError(t, err)
		f.Labels = map[string]string{"touched": fmt.Sprint(i)}
		_, err = fooClient.Update(ctx, f, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return metrics.reconciles.Load() > before }, eventually, time.Millisecond)
	}
	var warnings int
	for _, e := range recorder.Events() {
		if e.Reason == samplev1alpha1.ReasonErrResourceExists {
			warnings++
		}
	}
	assert.Equal(t, 1, warnings, "one Warning event for one refusal: %v", recorder.Events())
	assert.Equal(t, int64(1), metrics.errors.Load(), "the refusal is not retried")

	// The foreign Deployment goes: the Foo gets its own.
	require.NoError(t, kube.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(d) != nil && metav1.GetControllerOf(d).Name == "example-foo"
	}, 5*time.Second, time.Millisecond, "the Foo creates its Deployment once the foreign one is gone")

	cancel()
	require.NoError(t, <-done)
}
