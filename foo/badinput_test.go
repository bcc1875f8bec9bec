package foo_test

// The tests in this file feed the running controller input it must refuse
// or survive: invalid specs the schema would normally stop, Deployments it
// does not own, Foos and Deployments that change or vanish under it, and
// tombstones of deletes its informers missed.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// stormWindow is how long a test watches for a retry storm once the
// controller has reported its outcome.
const stormWindow = time.Second

// settledReconciles bounds the reconciles of a Foo that needs nothing more,
// over stormWindow: the echoes of the controller's own last writes (the
// Foo's status, the Deployments it created or deleted), and one retry if an
// echo arrived before the informer had seen a Deployment just created.
const settledReconciles = 5

// settle waits until the controller has gone quiet long enough to show
// that it is not retrying anything.
func (h *harness) settle(t *testing.T, quiet time.Duration) {
	t.Helper()
	last, since := h.metrics.reconciles.Load(), time.Now()
	require.Eventually(t, func() bool {
		if n := h.metrics.reconciles.Load(); n != last {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= quiet
	}, eventually, 5*time.Millisecond, "the controller goes quiet")
}

// updateSpec changes a Foo's spec through the API, bumping its generation as
// the API server does.
func (h *harness) updateSpec(t *testing.T, name string, change func(*samplev1alpha1.FooSpec)) {
	t.Helper()
	f, err := h.getFoo(name)
	require.NoError(t, err)
	change(&f.Spec)
	f.Generation++
	_, err = h.foos.SamplecontrollerV1alpha1().Foos(ns).Update(context.Background(), f, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// deploymentWrites returns the Deployment requests that change state.
func deploymentWrites(kube *k8stesting.Fake) []k8stesting.Action {
	return slices.DeleteFunc(reconciletest.WriteActions(kube), func(a k8stesting.Action) bool {
		return a.GetResource() != deploymentResource
	})
}

// TestBadInput runs the controller on input it must refuse or survive.
// Each case checks the outcome (a Warning event and a Ready=False condition
// where something is wrong with the Foo), that no Deployment the Foo does
// not own is written, and that the controller then either settles or
// retries on the backoff schedule: no retry storm.
func TestBadInput(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	web := func() *samplev1alpha1.Foo { return newFoo("example-foo", "web", ptr.To[int32](3)) }
	// readyWeb is a Foo whose Deployment "web" is in place and available.
	readyWeb := func() []runtime.Object {
		return []runtime.Object{
			withStatus(web(), 3, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)),
			deploymentFor(web(), "web", 3, 3),
		}
	}
	withOwners := func(d *appsv1.Deployment, refs ...metav1.OwnerReference) *appsv1.Deployment {
		d.OwnerReferences = refs
		return d
	}
	existsMsg := func(name string) string { return fmt.Sprintf(foo.MessageResourceExists, name) }

	type badInputCase struct {
		name    string
		objects []runtime.Object
		// before runs before the informers start (reactors).
		before func(h *harness)
		// act runs once the controller has synced.
		act func(t *testing.T, h *harness)
		// foo is the Foo whose outcome is checked.
		foo string
		// wantWarning is the reason of the Warning event about foo; empty
		// means no Warning event may be recorded at all.
		wantWarning, wantEventMsg string
		// wantReady, wantReason and wantMsg describe foo's Ready
		// condition; wantReady is empty when foo no longer exists.
		wantReady           metav1.ConditionStatus
		wantReason, wantMsg string
		// protected are Deployments the Foo does not own: never written.
		protected []string
		// retried: the problem may clear up by itself, so it is retried
		// with backoff; otherwise the controller settles.
		retried bool
		check   func(t *testing.T, h *harness)
	}
	invalid := func(name string, f *samplev1alpha1.Foo, msg string) badInputCase {
		return badInputCase{
			name: name, objects: []runtime.Object{f}, foo: f.Name,
			wantWarning: samplev1alpha1.ReasonInvalidSpec, wantEventMsg: msg,
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonInvalidSpec, wantMsg: msg,
			check: func(t *testing.T, h *harness) {
				assert.Empty(t, deploymentWrites(&h.kube.Fake), "nothing is created for an invalid spec")
				assert.Len(t, h.recorder.Find(corev1.EventTypeWarning, ""), 1, "reported once, not on every reconcile")
			},
		}
	}
	foreign := func(name string, d *appsv1.Deployment) badInputCase {
		return badInputCase{
			name: name, objects: []runtime.Object{web(), d}, foo: "example-foo",
			wantWarning: samplev1alpha1.ReasonErrResourceExists, wantEventMsg: existsMsg("web"),
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists, wantMsg: existsMsg("web"),
			protected: []string{"web"}, retried: true,
		}
	}
	tests := []badInputCase{
		invalid("empty deploymentName", newFoo("example-foo", "", nil), "spec.deploymentName: Required value"),
		invalid("invalid deploymentName", newFoo("example-foo", "Web_1", nil), `spec.deploymentName: Invalid value: "Web_1"`),
		invalid("too long deploymentName", newFoo("example-foo", strings.Repeat("a", 254), nil), "must be no more than 253 characters"),
		invalid("negative replicas", newFoo("example-foo", "web", ptr.To[int32](-1)), "spec.replicas: Invalid value: -1"),
		invalid("huge replicas", newFoo("example-foo", "web", ptr.To[int32](math.MaxInt32)), "spec.replicas: Invalid value: 2147483647"),
		foreign("Deployment controlled by another Foo", deploymentFor(newFoo("other-foo", "web", nil), "web", 1, 1)),
		foreign("Deployment without a controller", withOwners(deploymentFor(web(), "web", 1, 1))),
		foreign("Deployment controlled by another kind", withOwners(deploymentFor(web(), "web", 1, 1), metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d4cf56db6", UID: "uid-rs", Controller: ptr.To(true),
		})),
		foreign("Deployment controlled by an earlier Foo of the same name", func() *appsv1.Deployment {
			earlier := web()
			earlier.UID = "uid-example-foo-before-recreation"
			return deploymentFor(earlier, "web", 3, 3)
		}()),
		{
			name:    "two Foos naming the same Deployment",
			objects: []runtime.Object{newFoo("foo-a", "web", ptr.To[int32](3))},
			act: func(t *testing.T, h *harness) {
				h.waitDeployment(t, "foo-a")
				h.makeAvailable(t, "web")
				h.waitReady(t, "foo-a", 3)
				h.kube.ClearActions()
				_, err := h.foos.SamplecontrollerV1alpha1().Foos(ns).Create(context.Background(),
					newFoo("foo-b", "web", ptr.To[int32](1)), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			foo:         "foo-b",
			wantWarning: samplev1alpha1.ReasonErrResourceExists, wantEventMsg: existsMsg("web"),
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists, wantMsg: existsMsg("web"),
			protected: []string{"web"}, retried: true,
			check: func(t *testing.T, h *harness) {
				h.waitReady(t, "foo-a", 3)
				first := h.waitDeployment(t, "foo-a")
				assert.Equal(t, types.UID("uid-foo-a"), metav1.GetControllerOf(first).UID, "the first Foo keeps its Deployment")
			},
		},
		{
			name:    "deploymentName changed",
			objects: readyWeb(),
			act: func(t *testing.T, h *harness) {
				h.settle(t, 100*time.Millisecond)
				h.updateSpec(t, "example-foo", func(s *samplev1alpha1.FooSpec) { s.DeploymentName = "web-v2" })
			},
			foo:       "example-foo",
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web-v2", 0, 3),
			check: func(t *testing.T, h *harness) {
				h.waitDeployment(t, "example-foo")
				_, err := h.kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
				assert.True(t, apierrors.IsNotFound(err), "the old Deployment is deleted: %v", err)
				for _, a := range deploymentWrites(&h.kube.Fake) {
					if del, ok := a.(k8stesting.DeleteAction); ok {
						assert.Equal(t, "web", del.GetName())
						require.NotNil(t, del.GetDeleteOptions().Preconditions)
						assert.Equal(t, types.UID("uid-deploy-web"), *del.GetDeleteOptions().Preconditions.UID)
					}
				}
				assert.NotEmpty(t, h.recorder.Find(corev1.EventTypeNormal, foo.ReasonSynced))
				h.makeAvailable(t, "web-v2")
				h.waitReady(t, "example-foo", 3)
			},
		},
		{
			name:    "deploymentName changed to the name of a Deployment it does not own",
			objects: append(readyWeb(), withOwners(deploymentFor(web(), "db", 1, 1))),
			act: func(t *testing.T, h *harness) {
				h.settle(t, 100*time.Millisecond)
				h.updateSpec(t, "example-foo", func(s *samplev1alpha1.FooSpec) { s.DeploymentName = "db" })
			},
			foo:         "example-foo",
			wantWarning: samplev1alpha1.ReasonErrResourceExists, wantEventMsg: existsMsg("db"),
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonErrResourceExists, wantMsg: existsMsg("db"),
			protected: []string{"db"}, retried: true,
			check: func(t *testing.T, h *harness) {
				_, err := h.kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
				assert.NoError(t, err, "the old Deployment stays until a new one is in place")
				assert.Empty(t, deploymentWrites(&h.kube.Fake))
			},
		},
		{
			name:    "Foo deleted mid-reconcile",
			objects: []runtime.Object{web()},
			before: func(h *harness) {
				var once sync.Once
				h.kube.PrependReactor("create", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
					// The Foo is deleted while its Deployment is being created;
					// the status update that follows finds no Foo.
					once.Do(func() { _ = h.foos.Tracker().Delete(fooResource, ns, "example-foo") })
					return false, nil, nil
				})
			},
			act: func(t *testing.T, h *harness) {
				require.Eventually(t, func() bool {
					_, err := h.getFoo("example-foo")
					return apierrors.IsNotFound(err) && len(deploymentWrites(&h.kube.Fake)) > 0
				}, eventually, time.Millisecond)
			},
			foo: "example-foo",
			check: func(t *testing.T, h *harness) {
				statusWrites := slices.DeleteFunc(h.foos.Actions(), func(a k8stesting.Action) bool {
					return a.GetVerb() != "update" || a.GetSubresource() != "status"
				})
				assert.NotEmpty(t, statusWrites, "the status update was tried and found no Foo")
				assert.Zero(t, h.metrics.errors.Load(), "a Foo deleted mid-reconcile is not an error")
				assert.Empty(t, h.errorLogs(""), "nor is it logged as one")
				d, err := h.kube.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
				require.NoError(t, err)
				assert.Empty(t, deploymentProblems(d, web()), "the Deployment is controlled by the deleted Foo: garbage collection takes it")
			},
		},
		{
			name:    "Deployment deleted by someone else",
			objects: readyWeb(),
			act: func(t *testing.T, h *harness) {
				h.settle(t, 100*time.Millisecond)
				require.NoError(t, h.kube.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}))
			},
			foo:       "example-foo",
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web", 0, 3),
			check: func(t *testing.T, h *harness) {
				h.waitDeployment(t, "example-foo")
				h.makeAvailable(t, "web")
				h.waitReady(t, "example-foo", 3)
			},
		},
		{
			name:    "invalid spec corrected later",
			objects: []runtime.Object{newFoo("example-foo", "Web_1", ptr.To[int32](3))},
			act: func(t *testing.T, h *harness) {
				h.waitCondition(t, "example-foo", metav1.ConditionFalse, samplev1alpha1.ReasonInvalidSpec)
				h.updateSpec(t, "example-foo", func(s *samplev1alpha1.FooSpec) { s.DeploymentName = "web" })
			},
			foo:         "example-foo",
			wantWarning: samplev1alpha1.ReasonInvalidSpec, wantEventMsg: `spec.deploymentName: Invalid value: "Web_1"`,
			wantReady: metav1.ConditionFalse, wantReason: samplev1alpha1.ReasonDeploymentNotReady, wantMsg: readyMsg("web", 0, 3),
			check: func(t *testing.T, h *harness) {
				h.waitDeployment(t, "example-foo")
				h.makeAvailable(t, "web")
				h.waitReady(t, "example-foo", 3)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startHarness(t, harnessOptions{before: tt.before}, tt.objects...)
			if tt.act != nil {
				tt.act(t, h)
			}
			originals := map[string]runtime.Object{}
			for _, name := range tt.protected {
				obj, err := h.kube.Tracker().Get(deploymentResource, ns, name)
				require.NoError(t, err)
				originals[name] = obj
			}

			// The outcome.
			if tt.wantWarning != "" {
				require.Eventually(t, func() bool { return len(h.recorder.Find(corev1.EventTypeWarning, tt.wantWarning)) > 0 },
					eventually, time.Millisecond, "a Warning event %s", tt.wantWarning)
				ev := h.recorder.Find(corev1.EventTypeWarning, tt.wantWarning)[0]
				assert.Equal(t, tt.foo, ev.Name, "the event is about the Foo")
				assert.Contains(t, ev.Message, tt.wantEventMsg)
			}
			if tt.wantReady != "" {
				f := h.waitCondition(t, tt.foo, tt.wantReady, tt.wantReason)
				assert.Contains(t, meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady).Message, tt.wantMsg)
			}

			// No retry storm.
			bound := int64(settledReconciles)
			if tt.retried {
				bound = int64(backoffAttempts(queue.DefaultBaseDelay, stormWindow)) + 1
			}
			before := h.metrics.reconciles.Load()
			assert.Never(t, func() bool { return h.metrics.reconciles.Load()-before > bound },
				stormWindow, 10*time.Millisecond, "more than %d reconciles in %s", bound, stormWindow)
			t.Logf("%d reconciles in %s after the outcome (bound %d), %d in all, %d failed",
				h.metrics.reconciles.Load()-before, stormWindow, bound, h.metrics.reconciles.Load(), h.metrics.errors.Load())

			// Nothing it does not own is written.
			for _, a := range reconcileWrites(&h.kube.Fake) {
				assert.Equal(t, deploymentResource, a.GetResource(), "only Deployments are written: %s %s", a.GetVerb(), a.GetResource())
				assert.NotContains(t, tt.protected, reconciletest.ActionName(a), "%s of a Deployment the Foo does not own", a.GetVerb())
				if c, ok := a.(k8stesting.CreateAction); ok {
					assert.NotNil(t, metav1.GetControllerOf(c.GetObject().(metav1.Object)), "a created Deployment has a controller")
				}
			}
			for name, orig := range originals {
				now, err := h.kube.Tracker().Get(deploymentResource, ns, name)
				require.NoError(t, err)
				assert.Equal(t, orig, now, "Deployment %s is unchanged", name)
			}
			for _, ev := range h.recorder.Find(corev1.EventTypeWarning, "") {
				assert.Equal(t, tt.wantWarning, ev.Reason, "unexpected Warning event %s", ev)
			}
			if tt.check != nil {
				tt.check(t, h)
			}
		})
	}
}

// reconcileWrites returns the write requests sent through a fake, except
// those the test itself sent to play the Deployment controller (status)
// or someone else (a delete without preconditions).
func reconcileWrites(kube *k8stesting.Fake) []k8stesting.Action {
	return slices.DeleteFunc(kube.Actions(), func(a k8stesting.Action) bool {
		if slices.Contains([]string{"get", "list", "watch"}, a.GetVerb()) || a.GetSubresource() == "status" {
			return true
		}
		del, ok := a.(k8stesting.DeleteAction)
		return ok && del.GetDeleteOptions().Preconditions == nil
	})
}

// TestHandlersTombstones delivers deletes to the event handlers the
// controller registered as an informer does when a relist finds objects
// gone whose delete events it missed: tombstones that carry the last state
// the informer knew, or only the key. Handlers are typed, so an informer
// cannot hand them an object of another type; what reaches them is a
// cache.DeletedObject of their type. A tombstone that tells which Foo is
// concerned enqueues it at once; one that does not enqueues nothing, and no
// tombstone is reported as an error.
func TestHandlersTombstones(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	unrelated := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated", UID: "uid-deploy-unrelated"}}
	h, fooHandler, deployHandler := startWithDeploymentPending(t, unrelated)
	cachedFoo := h.fooInformer.cached(t, ns+"/example-foo")
	cachedDeployment := h.deployInformer.cached(t, ns+"/web")
	cachedUnrelated := h.deployInformer.cached(t, ns+"/unrelated")
	// A Deployment of the wanted name that the Foo does not control: the
	// handler by name still finds the Foo.
	wantedByName := cachedDeployment.(*appsv1.Deployment).DeepCopy()
	wantedByName.OwnerReferences = nil

	tests := []struct {
		name      string
		handler   cache.ResourceEventHandler
		tombstone cache.DeletedFinalStateUnknown
		// enqueues: the Foo is enqueued; otherwise nothing is.
		enqueues bool
	}{
		{"Foo tombstone with the last known Foo", fooHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/example-foo", Obj: cachedFoo}, true},
		// A needless reconcile is harmless, a lost delete is not.
		{"Foo tombstone with only the key", fooHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/example-foo"}, true},
		{"Deployment tombstone with the last known Deployment", deployHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/web", Obj: cachedDeployment}, true},
		{"Deployment tombstone of a Deployment the Foo wants by name", deployHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/web", Obj: wantedByName}, true},
		{"Deployment tombstone of an unrelated Deployment", deployHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/unrelated", Obj: cachedUnrelated}, false},
		// Neither the controller nor the name can be known without the
		// object.
		{"Deployment tombstone with only the key", deployHandler,
			cache.DeletedFinalStateUnknown{Key: ns + "/web"}, false},
	}
	errorsBefore := h.metrics.errors.Load()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adds, reconciles := h.metrics.adds.Load(), h.metrics.reconciles.Load()
			// Handlers enqueue synchronously: the adds are counted when
			// OnDelete returns.
			require.NotPanics(t, func() { tt.handler.OnDelete(tt.tombstone) })
			if !tt.enqueues {
				assert.Equal(t, adds, h.metrics.adds.Load(), "nothing is enqueued")
				return
			}
			assert.Greater(t, h.metrics.adds.Load(), adds, "the Foo is enqueued")
			require.Eventually(t, func() bool {
				return h.metrics.reconciles.Load() > reconciles && h.ctrl.Len() == 0 && h.ctrl.Active() == 0
			}, eventually, time.Millisecond, "the Foo is reconciled")
		})
	}
	assert.Equal(t, errorsBefore, h.metrics.errors.Load(), "no reconcile failed")
	assert.Empty(t, h.errorLogs(""), "no tombstone is reported as an error")
}

// TestResyncEnqueuesEachFooOnce replays cached objects to the handlers the
// controller registered, as an informer's resync does (same object, same
// resourceVersion). A resync of the Foos reconciles each Foo; one of the
// Deployments adds nothing to it, so the Deployment handlers leave it
// alone, while a Deployment that changed still reaches its Foo.
func TestResyncEnqueuesEachFooOnce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	h, fooHandler, deployHandler := startWithDeploymentPending(t)
	cachedFoo := h.fooInformer.cached(t, ns+"/example-foo")
	owned := h.deployInformer.cached(t, ns+"/web").(*appsv1.Deployment)
	require.NotEmpty(t, owned.ResourceVersion)
	wantedByName := owned.DeepCopy()
	wantedByName.OwnerReferences = nil
	changed := owned.DeepCopy()
	changed.ResourceVersion += "0"

	tests := []struct {
		name         string
		handler      cache.ResourceEventHandler
		oldObj, obj  any
		wantEnqueued bool
	}{
		{"Foo resync", fooHandler, cachedFoo, cachedFoo, true},
		{"resync of the Deployment the Foo controls", deployHandler, owned, owned, false},
		{"resync of a Deployment the Foo wants by name", deployHandler, wantedByName, wantedByName, false},
		{"change of the Deployment the Foo controls", deployHandler, owned, changed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Eventually(t, func() bool { return h.ctrl.Len() == 0 && h.ctrl.Active() == 0 }, eventually, time.Millisecond)
			adds := h.metrics.adds.Load()
			// Handlers enqueue synchronously: the adds are counted when
			// OnUpdate returns.
			tt.handler.OnUpdate(tt.oldObj, tt.obj)
			if tt.wantEnqueued {
				assert.Greater(t, h.metrics.adds.Load(), adds, "the Foo is enqueued")
			} else {
				assert.Equal(t, adds, h.metrics.adds.Load(), "nothing is enqueued")
			}
		})
	}
}

// startWithDeploymentPending starts a controller over the Foo example-foo
// and objects, waits until it has created the Foo's Deployment web and
// reported it not ready yet, and returns the handlers the controller
// registered on each informer, each as one.
func startWithDeploymentPending(t *testing.T, objects ...runtime.Object) (h *harness, fooHandler, deployHandler cache.ResourceEventHandler) {
	t.Helper()
	h = startHarness(t, harnessOptions{}, append([]runtime.Object{newFoo("example-foo", "web", ptr.To[int32](3))}, objects...)...)
	h.waitDeployment(t, "example-foo")
	h.waitCondition(t, "example-foo", metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady)
	h.settle(t, 200*time.Millisecond)
	fooHandler, fooHandlers := h.fooInformer.handler(t)
	deployHandler, deployHandlers := h.deployInformer.handler(t)
	require.Equal(t, 1, fooHandlers, "one Foo handler")
	require.Equal(t, 2, deployHandlers, "two Deployment handlers: the owner's and the one by wanted name")
	return h, fooHandler, deployHandler
}
