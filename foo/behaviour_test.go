package foo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// The scenarios of the controller-runtime twin's envtest suite
// (testenv/bench/cmd/crfoo), run as the README's Testing section
// teaches: the controller over strict fake clientsets, WaitIdle after
// each step.

// running is the Foo controller running over strict fake clientsets.
type running struct {
	t        *testing.T
	kube     *kubefake.Clientset
	foos     *foofake.Clientset
	recorder *eventstest.Recorder
	ctrl     *foo.Controller
}

func startRunning(t *testing.T) *running {
	r := &running{t: t, kube: kubefake.NewClientset(), foos: foofake.NewClientset(), recorder: eventstest.NewRecorder()}
	reconciletest.Strict(r.kube, r.foos)
	kubeInformers := kubeinformers.NewSharedInformerFactory(r.kube, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(r.foos, 0)
	var err error
	r.ctrl, err = foo.NewController(reconciletest.Context(t), r.kube, r.foos, kubeInformers.Apps().V1().Deployments(),
		fooInformers.Samplecontroller().V1alpha1().Foos(), r.recorder)
	require.NoError(t, err)
	queuetest.Start(t, r.ctrl, operator.WithInformers(kubeInformers, fooInformers))
	return r
}

func (r *running) idle() { queuetest.WaitIdle(r.t, r.ctrl, r.kube, r.foos) }

func (r *running) createFoo(name, deploymentName string, replicas *int32, finalizers ...string) *samplev1alpha1.Foo {
	f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(context.Background(), &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: deploymentName, Replicas: replicas}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	r.idle()
	return f
}

func (r *running) deployment(name string) *appsv1.Deployment {
	d, err := r.kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(r.t, err)
	return d
}

// edit changes the Deployment as someone else would and returns its
// resourceVersion after the change, once the controller is idle again.
func (r *running) edit(name string, change func(d *appsv1.Deployment)) string {
	d := r.deployment(name)
	change(d)
	d, err := r.kube.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(r.t, err)
	r.idle()
	return d.ResourceVersion
}

// setAvailable plays the Deployment controller.
func (r *running) setAvailable(name string, available int32) {
	d := r.deployment(name)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
		ReadyReplicas: available, AvailableReplicas: available}
	_, err := r.kube.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(r.t, err)
	r.idle()
}

func (r *running) ready(name string) metav1.Condition {
	f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(r.t, err)
	assert.Equal(r.t, f.Generation, f.Status.ObservedGeneration)
	c := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
	require.NotNil(r.t, c)
	return metav1.Condition{Status: c.Status, Reason: c.Reason, Message: c.Message}
}

func availability(name string, available, want int32) string {
	return fmt.Sprintf("Deployment %q has %d of %d replicas available", name, available, want)
}

// foreignDeployment returns a Deployment of nginx without an owner.
func foreignDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx"}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}}}}}
}

func containers(d *appsv1.Deployment) []string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func TestCreatesTheDeploymentControlledByTheFoo(t *testing.T) {
	r := startRunning(t)
	f := r.createFoo("example-foo", "web", ptr.To[int32](3))
	d := r.deployment("web")
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	ref := metav1.GetControllerOf(d)
	require.NotNil(t, ref, "the Deployment has a controller owner reference")
	assert.Equal(t, metav1.OwnerReference{APIVersion: "samplecontroller.k8s.io/v1alpha1", Kind: "Foo", Name: "example-foo", UID: f.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, *ref)
	assert.Equal(t, map[string]string{"app": "nginx", "controller": "example-foo"}, d.Spec.Selector.MatchLabels)
	assert.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	assert.Equal(t, []string{"nginx=nginx:latest"}, containers(d))
	assert.Equal(t, metav1.Condition{Status: metav1.ConditionFalse, Reason: samplev1alpha1.ReasonDeploymentNotReady, Message: availability("web", 0, 3)}, r.ready("example-foo"))

	r.createFoo("one", "one", nil)
	assert.Equal(t, int32(1), *r.deployment("one").Spec.Replicas, "unset replicas means one")
}

func TestCorrectsWhatItOwnsAndLeavesTheRest(t *testing.T) {
	r := startRunning(t)
	r.createFoo("example-foo", "web", ptr.To[int32](3))

	r.edit("web", func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](1)
		d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways // as the API server defaults it
	})
	assert.Equal(t, int32(3), *r.deployment("web").Spec.Replicas, "replica drift is corrected")
	assert.Equal(t, corev1.PullAlways, r.deployment("web").Spec.Template.Spec.Containers[0].ImagePullPolicy, "defaulted fields are kept")
	eventstest.RequireEvent(t, r.recorder, corev1.EventTypeNormal, foo.ReasonSynced)

	r.edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.0" })
	assert.Equal(t, []string{"nginx=nginx:latest"}, containers(r.deployment("web")), "a changed image is corrected")

	rv := r.edit("web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "proxy", Image: "envoy:1"}}, d.Spec.Template.Spec.Containers...)
		d.Annotations = map[string]string{"policy.example.com/injected": "true"}
	})
	assert.Equal(t, rv, r.deployment("web").ResourceVersion, "a sidecar is left alone")

	r.edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[1].Image = "nginx:1.0" })
	assert.Equal(t, []string{"proxy=envoy:1", "nginx=nginx:latest"}, containers(r.deployment("web")), "its own container is corrected beside the sidecar")
	r.edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:1] })
	assert.Equal(t, []string{"proxy=envoy:1", "nginx=nginx:latest"}, containers(r.deployment("web")), "its container is added beside others")
}

func TestMirrorsTheDeploymentsAvailability(t *testing.T) {
	r := startRunning(t)
	r.createFoo("example-foo", "web", ptr.To[int32](3))
	r.setAvailable("web", 1)
	assert.Equal(t, metav1.Condition{Status: metav1.ConditionFalse, Reason: samplev1alpha1.ReasonDeploymentNotReady, Message: availability("web", 1, 3)}, r.ready("example-foo"))
	r.setAvailable("web", 3)
	assert.Equal(t, metav1.Condition{Status: metav1.ConditionTrue, Reason: samplev1alpha1.ReasonDeploymentReady, Message: availability("web", 3, 3)}, r.ready("example-foo"))

	r.kube.ClearActions()
	r.foos.ClearActions()
	r.ctrl.Add(cache.ObjectName{Namespace: ns, Name: "example-foo"})
	r.idle()
	assert.Empty(t, reconciletest.WriteActions(&r.kube.Fake, &r.foos.Fake), "nothing is written when everything matches")

	r.edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Annotations = map[string]string{"restarted": "now"} })
	assert.Equal(t, metav1.ConditionFalse, r.ready("example-foo").Status, "not Ready while the Deployment rolls out a new generation")
}

func TestNeverWritesADeploymentItDoesNotControl(t *testing.T) {
	tests := []struct {
		name   string
		theirs func(r *running)
	}{
		{name: "one without a controller", theirs: func(r *running) {
			_, err := r.kube.AppsV1().Deployments(ns).Create(context.Background(), foreignDeployment("web"), metav1.CreateOptions{})
			require.NoError(t, err)
		}},
		{name: "one controlled by another Foo", theirs: func(r *running) { r.createFoo("other-foo", "web", nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRunning(t)
			tt.theirs(r)
			rv := r.deployment("web").ResourceVersion
			r.createFoo("example-foo", "web", ptr.To[int32](3))
			assert.Equal(t, metav1.Condition{Status: metav1.ConditionFalse, Reason: samplev1alpha1.ReasonErrResourceExists,
				Message: `Resource "web" already exists and is not managed by Foo`}, r.ready("example-foo"))
			eventstest.RequireEvent(t, r.recorder, corev1.EventTypeWarning, samplev1alpha1.ReasonErrResourceExists)
			assert.Equal(t, rv, r.deployment("web").ResourceVersion, "the Deployment is not written")
		})
	}
}

func TestRenamedDeployment(t *testing.T) {
	r := startRunning(t)
	r.createFoo("other-foo", "theirs", nil)
	theirs := r.deployment("theirs").ResourceVersion
	r.createFoo("example-foo", "web", ptr.To[int32](3))
	f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(context.Background(), "example-foo", metav1.GetOptions{})
	require.NoError(t, err)
	f.Spec.DeploymentName = "web-v2"
	_, err = r.foos.SamplecontrollerV1alpha1().Foos(ns).Update(context.Background(), f, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.idle()
	r.deployment("web-v2")
	_, err = r.kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the old Deployment is deleted: %v", err)
	assert.Equal(t, availability("web-v2", 0, 3), r.ready("example-foo").Message)
	assert.Equal(t, theirs, r.deployment("theirs").ResourceVersion, "another owner's Deployment is left alone")
}

func TestFooBeingDeletedIsLeftAlone(t *testing.T) {
	r := startRunning(t)
	r.createFoo("example-foo", "web", ptr.To[int32](3), "example.com/keep")
	require.NoError(t, r.foos.SamplecontrollerV1alpha1().Foos(ns).Delete(context.Background(), "example-foo", metav1.DeleteOptions{}))
	r.idle()
	rv := r.edit("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](1) })
	assert.Equal(t, rv, r.deployment("web").ResourceVersion)
}

// Without the CRD's validation (a fake clientset has none), the controller
// refuses an invalid spec itself.
func TestInvalidSpecIsRefused(t *testing.T) {
	tests := []struct {
		name, fooName, deploymentName string
		replicas                      *int32
		wantMsg                       string
	}{
		{"empty deploymentName", "bad", "", nil, "spec.deploymentName: Required value"},
		{"invalid deploymentName", "bad", "Web_1", nil, "spec.deploymentName: Invalid value"},
		{"too long deploymentName", "bad", strings.Repeat("a", 254), nil, "must be no more than 253 characters"},
		{"negative replicas", "bad", "web", ptr.To[int32](-1), "spec.replicas: Invalid value: -1"},
		{"huge replicas", "bad", "web", ptr.To[int32](1 << 30), "spec.replicas: Invalid value: 1073741824"},
		{"a name too long for a pod label", strings.Repeat("f", samplev1alpha1.MaxNameLength+1), "web", nil, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRunning(t)
			r.createFoo(tt.fooName, tt.deploymentName, tt.replicas)
			ev := eventstest.RequireEvent(t, r.recorder, corev1.EventTypeWarning, samplev1alpha1.ReasonInvalidSpec)
			assert.Contains(t, ev.Message, tt.wantMsg)
			assert.Contains(t, r.ready(tt.fooName).Message, tt.wantMsg)
			list, err := r.kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, list.Items)
		})
	}
}

func TestRefusalRetriedAfterAFailedStatusWrite(t *testing.T) {
	r := startRunning(t)
	var failed atomic.Bool
	r.foos.PrependReactor("update", "foos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && failed.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewConflict(samplev1alpha1.Resource("foos"), "example-foo", errors.New("changed"))
		}
		return false, nil, nil
	})
	_, err := r.kube.AppsV1().Deployments(ns).Create(context.Background(), foreignDeployment("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	r.createFoo("example-foo", "web", ptr.To[int32](3))
	assert.Equal(t, samplev1alpha1.ReasonErrResourceExists, r.ready("example-foo").Reason)
	assert.True(t, failed.Load(), "the first status write failed")
}
