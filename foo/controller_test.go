package foo_test

import (
	"context"
	"errors"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

const ns = "default"

// fixture is a Foo controller over fake clientsets with synced informers.
type fixture struct {
	kube      *kubefake.Clientset
	foos      *foofake.Clientset
	ctrl      *foo.Controller
	recorder  *eventstest.Recorder
	fooLister foolisters.FooLister
	// deployLister reads the controller's Deployment cache.
	deployLister appslisters.DeploymentLister
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	var kubeObjs, fooObjs []runtime.Object
	for _, o := range objects {
		if _, isFoo := o.(*samplev1alpha1.Foo); isFoo {
			fooObjs = append(fooObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{
		kube:     kubefake.NewClientset(kubeObjs...),
		foos:     foofake.NewClientset(fooObjs...),
		recorder: eventstest.NewRecorder(),
	}
	// The fake tracker replays to a watch what was added or changed since
	// the list before it, but not what was deleted: a Deployment deleted
	// between an informer's list and its watch would stay in the cache.
	// The reactor counts watches under the fake's lock, which registers
	// the watcher before any later request is served.
	var deploymentsWatched, foosWatched atomic.Bool
	for fake, watched := range map[*k8stesting.Fake]*atomic.Bool{&f.kube.Fake: &deploymentsWatched, &f.foos.Fake: &foosWatched} {
		fake.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
			watched.Store(true)
			return false, nil, nil
		})
	}
	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kube, 0)
	fooInformers := fooinformers.NewSharedInformerFactory(f.foos, 0)
	f.fooLister = fooInformers.Samplecontroller().V1alpha1().Foos().Lister()
	f.deployLister = kubeInformers.Apps().V1().Deployments().Lister()
	ctrl, err := foo.NewController(reconciletest.Context(t), f.kube, f.foos,
		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(), f.recorder)
	require.NoError(t, err)
	f.ctrl = ctrl
	reconciletest.StartInformers(t, kubeInformers, fooInformers)
	require.Eventually(t, func() bool { return deploymentsWatched.Load() && foosWatched.Load() }, reconciletest.SyncTimeout, time.Millisecond,
		"the Deployment and Foo informers watch")
	return f
}

func (f *fixture) run(t *testing.T, name string) reconciletest.Outcome {
	t.Helper()
	return reconciletest.Run(t, reconcile.Reconciler[cache.ObjectName](f.ctrl), cache.ObjectName{Namespace: ns, Name: name}, &f.kube.Fake, &f.foos.Fake)
}

func newFoo(name, deploymentName string, replicas *int32) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		TypeMeta:   metav1.TypeMeta{APIVersion: samplev1alpha1.SchemeGroupVersion.String(), Kind: "Foo"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: deploymentName, Replicas: replicas},
	}
}

// withStatus sets a Foo's status as the controller would have written it.
func withStatus(f *samplev1alpha1.Foo, available int32, ready metav1.ConditionStatus, reason, msg string) *samplev1alpha1.Foo {
	f.Status.AvailableReplicas = available
	f.Status.ObservedGeneration = f.Generation
	f.Status.Conditions = []metav1.Condition{{
		Type: samplev1alpha1.ConditionReady, Status: ready, Reason: reason, Message: msg,
		ObservedGeneration: f.Generation, LastTransitionTime: metav1.Now(),
	}}
	return f
}

// deploymentFor returns the Deployment the controller creates for f, with
// the given status.
func deploymentFor(f *samplev1alpha1.Foo, name string, replicas, available int32) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": f.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-deploy-" + name), Generation: 1,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(f, samplev1alpha1.SchemeGroupVersion.WithKind("Foo"))},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: "nginx:latest",
					// Defaulted by the API server; must not count as drift.
					ImagePullPolicy: corev1.PullAlways, TerminationMessagePath: "/dev/termination-log",
				}}},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, AvailableReplicas: available},
	}
}

func readyMsg(name string, available, want int32) string {
	return fmt.Sprintf("Deployment %q has %d of %d replicas available", name, available, want)
}

func TestReconcile(t *testing.T) {
	web := func() *samplev1alpha1.Foo { return newFoo("example-foo", "web", ptr.To[int32](3)) }
	foreign := func() *appsv1.Deployment {
		d := deploymentFor(web(), "web", 1, 1)
		d.OwnerReferences = nil
		return d
	}
	ownedByOther := func() *appsv1.Deployment {
		return deploymentFor(newFoo("other-foo", "web", nil), "web", 1, 1)
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		foo     string
		// wantWrites are the write requests, as reconciletest.Describe renders them.
		wantWrites   []string
		wantErr      func(t *testing.T, err error)
		wantEvents   []string // "Type Reason"
		wantReady    metav1.ConditionStatus
		wantReason   string
		wantMsg      string
		wantAvail    int32
		checkWritten func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) // web: default/web as stored after the reconcile
	}{
		{
			name:    "creates the Deployment controlled by the Foo",
			objects: []runtime.Object{web()},
			foo:     "example-foo",
			wantWrites: []string{
				"create apps/v1/deployments default/web",
				"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo",
			},
			wantEvents: nil, // creating and mirroring are in the status, not in events
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady,
			wantMsg: readyMsg("web", 0, 3),
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				d := web
				assert.Equal(t, int32(3), *d.Spec.Replicas)
				ref := metav1.GetControllerOf(d)
				require.NotNil(t, ref, "the Deployment has a controller owner reference")
				assert.Equal(t, types.UID("uid-example-foo"), ref.UID)
				assert.Equal(t, "samplecontroller.k8s.io/v1alpha1", ref.APIVersion)
				assert.Equal(t, "Foo", ref.Kind)
				assert.Equal(t, map[string]string{"app": "nginx", "controller": "example-foo"}, d.Spec.Selector.MatchLabels)
				assert.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
				require.Len(t, d.Spec.Template.Spec.Containers, 1)
				assert.Equal(t, "nginx:latest", d.Spec.Template.Spec.Containers[0].Image)
			},
		},
		{
			name:    "unset replicas means one",
			objects: []runtime.Object{newFoo("example-foo", "web", nil)},
			foo:     "example-foo",
			wantWrites: []string{
				"create apps/v1/deployments default/web",
				"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo",
			},
			wantEvents: nil, // creating and mirroring are in the status, not in events
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web", 0, 1),
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				assert.Equal(t, int32(1), *web.Spec.Replicas)
			},
		},
		{
			name:    "corrects replica drift",
			objects: []runtime.Object{withStatus(web(), 1, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web", 1, 3)), deploymentFor(web(), "web", 1, 1)},
			foo:     "example-foo",
			wantWrites: []string{
				"patch apps/v1/deployments default/web",
			},
			wantEvents: []string{"Normal Synced"},
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web", 1, 3), wantAvail: 1,
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				d := web
				assert.Equal(t, int32(3), *d.Spec.Replicas)
				assert.Equal(t, corev1.PullAlways, d.Spec.Template.Spec.Containers[0].ImagePullPolicy, "defaulted fields are kept")
			},
		},
		{
			name: "corrects a changed image and keeps defaulted fields",
			objects: []runtime.Object{
				withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				func() *appsv1.Deployment {
					d := deploymentFor(web(), "web", 3, 3)
					d.Spec.Template.Spec.Containers[0].Image = "nginx:1.0"
					return d
				}(),
			},
			foo:        "example-foo",
			wantWrites: []string{"patch apps/v1/deployments default/web"},
			wantEvents: []string{"Normal Synced"},
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				c := web.Spec.Template.Spec.Containers[0]
				assert.Equal(t, "nginx:latest", c.Image)
				assert.Equal(t, "/dev/termination-log", c.TerminationMessagePath)
			},
		},
		{
			name: "adds its container beside others and keeps them",
			objects: []runtime.Object{
				withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				func() *appsv1.Deployment {
					d := deploymentFor(web(), "web", 3, 3)
					d.Spec.Template.Spec.Containers[0].Name = "sidecar"
					return d
				}(),
			},
			foo:        "example-foo",
			wantWrites: []string{"patch apps/v1/deployments default/web"},
			wantEvents: []string{"Normal Synced"},
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				d := web
				names := []string{}
				for _, c := range d.Spec.Template.Spec.Containers {
					names = append(names, c.Name+"="+c.Image)
				}
				assert.Equal(t, []string{"sidecar=nginx:latest", "nginx=nginx:latest"}, names)
			},
		},
		{
			name: "leaves a sidecar, annotations and pod labels of others alone",
			objects: []runtime.Object{
				withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				func() *appsv1.Deployment {
					d := deploymentFor(web(), "web", 3, 3)
					d.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "proxy", Image: "envoy:1"}},
						d.Spec.Template.Spec.Containers...)
					d.Annotations = map[string]string{"policy.example.com/injected": "true"}
					d.Spec.Template.Labels["team"] = "payments"
					return d
				}(),
			},
			foo:        "example-foo",
			wantWrites: nil,
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
		},
		{
			name: "corrects its own container beside a sidecar",
			objects: []runtime.Object{
				withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				func() *appsv1.Deployment {
					d := deploymentFor(web(), "web", 3, 3)
					d.Spec.Template.Spec.Containers[0].Image = "nginx:1.0"
					d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1"})
					return d
				}(),
			},
			foo:        "example-foo",
			wantWrites: []string{"patch apps/v1/deployments default/web"},
			wantEvents: []string{"Normal Synced"},
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				c := web.Spec.Template.Spec.Containers
				require.Len(t, c, 2)
				assert.Equal(t, "nginx:latest", c[0].Image)
				assert.Equal(t, corev1.Container{Name: "proxy", Image: "envoy:1"}, c[1])
			},
		},
		{
			name:       "writes nothing when everything matches",
			objects:    []runtime.Object{withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)), deploymentFor(web(), "web", 3, 3)},
			foo:        "example-foo",
			wantWrites: nil,
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
		},
		{
			name:       "mirrors available replicas and turns Ready",
			objects:    []runtime.Object{withStatus(web(), 1, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web", 1, 3)), deploymentFor(web(), "web", 3, 3)},
			foo:        "example-foo",
			wantWrites: []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"},
			wantEvents: nil, // creating and mirroring are in the status, not in events
			wantReady:  metav1.ConditionTrue, wantReason: samplev1alpha1.ReasonDeploymentReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
		},
		{
			name: "not Ready while the Deployment rolls out a new generation",
			objects: []runtime.Object{
				withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				func() *appsv1.Deployment {
					d := deploymentFor(web(), "web", 3, 3)
					d.Generation = 2
					return d
				}(),
			},
			foo:        "example-foo",
			wantWrites: []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"},
			wantEvents: nil, // creating and mirroring are in the status, not in events
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web", 3, 3), wantAvail: 3,
		},
		{
			name:       "never writes a Deployment it does not control",
			objects:    []runtime.Object{web(), foreign()},
			foo:        "example-foo",
			wantWrites: []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"},
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, foo.ErrResourceExists)
				assert.True(t, errors.Is(err, &reconcile.TerminalError{}), "not retried: the Deployment watch wakes the Foo up")
			},
			wantEvents: []string{"Warning ErrResourceExists"},
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists,
			wantMsg: `Resource "web" already exists and is not managed by Foo`,
		},
		{
			name:       "never writes a Deployment controlled by another Foo",
			objects:    []runtime.Object{web(), ownedByOther()},
			foo:        "example-foo",
			wantWrites: []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"},
			wantErr:    func(t *testing.T, err error) { assert.ErrorIs(t, err, foo.ErrResourceExists) },
			wantEvents: []string{"Warning ErrResourceExists"},
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists,
			wantMsg: `Resource "web" already exists and is not managed by Foo`,
		},
		{
			name: "foreign Deployment reported by an earlier process: the event once more, no write",
			objects: []runtime.Object{
				withStatus(web(), 0, metav1.ConditionFalse, samplev1alpha1.ReasonErrResourceExists, `Resource "web" already exists and is not managed by Foo`),
				foreign(),
			},
			foo:        "example-foo",
			wantWrites: nil,
			wantErr:    func(t *testing.T, err error) { assert.ErrorIs(t, err, foo.ErrResourceExists) },
			wantEvents: []string{"Warning ErrResourceExists"},
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists,
			wantMsg: `Resource "web" already exists and is not managed by Foo`,
		},
		{
			name: "renamed Deployment: creates the new one and deletes the old one it controls",
			objects: []runtime.Object{
				withStatus(newFoo("example-foo", "web-v2", ptr.To[int32](3)), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
				deploymentFor(web(), "web", 3, 3),
			},
			foo: "example-foo",
			wantWrites: []string{
				"create apps/v1/deployments default/web-v2",
				"delete apps/v1/deployments default/web",
				"update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo",
			},
			wantEvents: []string{"Normal Synced"},
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web-v2", 0, 3),
			checkWritten: func(t *testing.T, writes []k8stesting.Action, web *appsv1.Deployment) {
				del, ok := writes[1].(k8stesting.DeleteAction)
				require.True(t, ok)
				require.NotNil(t, del.GetDeleteOptions().Preconditions)
				assert.Equal(t, types.UID("uid-deploy-web"), *del.GetDeleteOptions().Preconditions.UID, "deletes only the Deployment it saw")
			},
		},
		{
			name: "rename never deletes a Deployment of another owner",
			objects: []runtime.Object{
				withStatus(newFoo("example-foo", "web-v2", ptr.To[int32](3)), 0, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web-v2", 0, 3)),
				deploymentFor(newFoo("example-foo", "web-v2", ptr.To[int32](3)), "web-v2", 3, 0),
				ownedByOther(),
			},
			foo:        "example-foo",
			wantWrites: nil,
			wantReady:  metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web-v2", 0, 3),
		},
		{
			name:       "a deleted Foo is dropped quietly",
			objects:    []runtime.Object{deploymentFor(web(), "web", 3, 3)},
			foo:        "example-foo",
			wantWrites: nil,
		},
		{
			name: "a Foo being deleted is left alone",
			objects: []runtime.Object{func() *samplev1alpha1.Foo {
				f := web()
				f.DeletionTimestamp = ptr.To(metav1.Now())
				f.Finalizers = []string{"example.com/keep"}
				return f
			}()},
			foo:        "example-foo",
			wantWrites: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.objects...)
			out := f.run(t, tt.foo)
			if tt.wantErr != nil {
				require.Error(t, out.Err)
				tt.wantErr(t, out.Err)
			} else {
				require.NoError(t, out.Err)
			}
			assert.True(t, out.Result.IsZero())
			assert.Equal(t, tt.wantWrites, nonEmpty(reconciletest.Describe(out.Writes)))
			if tt.checkWritten != nil {
				web, _ := f.kube.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), "default", "web")
				d, _ := web.(*appsv1.Deployment)
				tt.checkWritten(t, out.Writes, d)
			}
			var events []string
			for _, e := range f.recorder.Events() {
				events = append(events, e.Type+" "+e.Reason)
				assert.Equal(t, tt.foo, e.Name, "events are about the Foo")
			}
			assert.Equal(t, tt.wantEvents, events)
			if tt.wantReady != "" {
				got := getFoo(t, f, tt.foo)
				cond := meta.FindStatusCondition(got.Status.Conditions, samplev1alpha1.ConditionReady)
				require.NotNil(t, cond, "Ready condition")
				assert.Equal(t, tt.wantReady, cond.Status)
				assert.Equal(t, tt.wantReason, cond.Reason)
				assert.Equal(t, tt.wantMsg, cond.Message)
				assert.Equal(t, got.Generation, cond.ObservedGeneration)
				assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
				assert.Equal(t, tt.wantAvail, got.Status.AvailableReplicas)
			}
		})
	}
}

func TestInvalidSpec(t *testing.T) {
	tests := []struct {
		name    string
		foo     *samplev1alpha1.Foo
		wantMsg string
	}{
		{name: "empty deploymentName", foo: newFoo("bad", "", nil), wantMsg: "spec.deploymentName: Required value"},
		{name: "invalid deploymentName", foo: newFoo("bad", "Web_1", nil), wantMsg: "spec.deploymentName: Invalid value"},
		{name: "too long deploymentName", foo: newFoo("bad", strings.Repeat("a", 254), nil), wantMsg: "must be no more than 253 characters"},
		{name: "negative replicas", foo: newFoo("bad", "web", ptr.To[int32](-1)), wantMsg: "spec.replicas: Invalid value: -1"},
		{name: "huge replicas", foo: newFoo("bad", "web", ptr.To[int32](1<<30)), wantMsg: "spec.replicas: Invalid value: 1073741824"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.foo)
			out := f.run(t, "bad")
			require.Error(t, out.Err)
			assert.True(t, errors.Is(out.Err, &reconcile.TerminalError{}), "an invalid spec is not retried: %v", out.Err)
			assert.Equal(t, []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/bad"}, reconciletest.Describe(out.Writes),
				"only the status is written")
			ev := eventstest.RequireEvent(t, f.recorder, corev1.EventTypeWarning, samplev1alpha1.ReasonInvalidSpec)
			assert.Contains(t, ev.Message, tt.wantMsg)

			got := getFoo(t, f, "bad")
			cond := meta.FindStatusCondition(got.Status.Conditions, samplev1alpha1.ConditionReady)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Equal(t, samplev1alpha1.ReasonInvalidSpec, cond.Reason)
			assert.Contains(t, cond.Message, tt.wantMsg)

			// Until the Foo changes, reconciling it again writes and reports nothing.
			f.recorder.Reset()
			require.Eventually(t, func() bool {
				cached, err := f.fooLister.Foos(ns).Get("bad")
				return err == nil && meta.IsStatusConditionFalse(cached.Status.Conditions, samplev1alpha1.ConditionReady)
			}, eventually, time.Millisecond, "the informer sees the status written")
			out = f.run(t, "bad")
			require.NoError(t, out.Err)
			assert.Empty(t, out.Writes)
			assert.Empty(t, f.recorder.Events())
		})
	}
}

func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func getFoo(t *testing.T, f *fixture, name string) *samplev1alpha1.Foo {
	t.Helper()
	got, err := f.foos.SamplecontrollerV1alpha1().Foos(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return got
}

// A Foo name longer than a label value allows would make every Deployment
// create fail; it is reported as an invalid spec instead of retried.
func TestNameTooLongForPodLabel(t *testing.T) {
	name := strings.Repeat("f", samplev1alpha1.MaxNameLength+1)
	f := newFixture(t, newFoo(name, "web", nil))
	out := f.run(t, name)
	require.Error(t, out.Err)
	assert.True(t, errors.Is(out.Err, &reconcile.TerminalError{}))
	assert.Equal(t, []string{"update samplecontroller.k8s.io/v1alpha1/foos/status default/" + name}, reconciletest.Describe(out.Writes))
	ev := eventstest.RequireEvent(t, f.recorder, corev1.EventTypeWarning, samplev1alpha1.ReasonInvalidSpec)
	assert.Contains(t, ev.Message, "metadata.name")
}

// A refusal whose status write fails is retried: the report is not lost.
func TestRefusalWithFailedStatusWriteIsRetried(t *testing.T) {
	theirs := deploymentFor(newFoo("example-foo", "web", nil), "web", 1, 1)
	theirs.OwnerReferences = nil
	f := newFixture(t, newFoo("example-foo", "web", ptr.To[int32](3)), theirs)
	f.foos.PrependReactor("update", "foos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, apierrors.NewConflict(samplev1alpha1.Resource("foos"), "example-foo", errors.New("changed"))
		}
		return false, nil, nil
	})
	out := f.run(t, "example-foo")
	require.Error(t, out.Err)
	assert.True(t, apierrors.IsConflict(out.Err), "the status write's error: %v", out.Err)
	assert.False(t, errors.Is(out.Err, &reconcile.TerminalError{}), "retried although the refusal itself is terminal")
}
