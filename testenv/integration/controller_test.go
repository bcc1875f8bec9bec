package integration

import (
	"fmt"
	"net/http"
	"slices"
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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// assertControlledDeployment checks the Deployment a Foo asks for: its
// controller owner reference as stored by the API server, replicas, and the
// nginx pod template.
func assertControlledDeployment(t *testing.T, d *appsv1.Deployment, f *samplev1alpha1.Foo, replicas int32) {
	t.Helper()
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion:         "samplecontroller.k8s.io/v1alpha1",
		Kind:               "Foo",
		Name:               f.Name,
		UID:                f.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}, d.OwnerReferences)
	assert.Equal(t, replicas, *d.Spec.Replicas)
	labels := map[string]string{"app": "nginx", "controller": f.Name}
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: labels}, d.Spec.Selector)
	assert.Equal(t, labels, d.Spec.Template.Labels)
	// Its own container, found by name; containers others added may be
	// there too.
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "nginx" })
	require.GreaterOrEqual(t, i, 0, "the nginx container: %+v", d.Spec.Template.Spec.Containers)
	assert.Equal(t, "nginx:latest", d.Spec.Template.Spec.Containers[i].Image)
}

// TestFirstSyncAndIdleResync follows one Foo from creation to Ready and
// counts, from the audit log, what the controller wrote on the way and
// during idle resyncs afterwards.
func TestFirstSyncAndIdleResync(t *testing.T) {
	t.Parallel()
	const resync = 2 * time.Second
	h := newHarness(t, harnessOptions{resync: resync})
	start := time.Now()

	// Unset replicas: the CRD's default (1) is what the controller sees.
	f := h.createFoo("example-foo", "example-foo", nil)
	require.Equal(t, ptr.To[int32](1), f.Spec.Replicas, "the schema defaults replicas")
	d := h.waitDeployment("example-foo")
	assertControlledDeployment(t, d, f, 1)

	// Nothing is available yet: the status says so for this generation.
	h.waitFooStatus("example-foo", "not Ready before the Deployment is available", func(c *assert.CollectT, f *samplev1alpha1.Foo) {
		assert.Equal(c, f.Generation, f.Status.ObservedGeneration)
		assert.Zero(c, f.Status.AvailableReplicas)
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonDeploymentNotReady, cond.Reason)
			assert.Equal(c, `Deployment "example-foo" has 0 of 1 replicas available`, cond.Message)
		}
	})

	// The Deployment becomes available: status mirrors it.
	h.makeAvailable("example-foo")
	ready := h.waitReady("example-foo", 1)
	cond := meta.FindStatusCondition(ready.Status.Conditions, samplev1alpha1.ConditionReady)
	assert.Equal(t, `Deployment "example-foo" has 1 of 1 replicas available`, cond.Message)
	h.waitQuiet("example-foo")

	firstSync := h.controllerWrites(start)
	t.Logf("first sync of one Foo: %d write requests by the controller: %s", len(firstSync), audit.FormatTally(audit.Tally(firstSync)))
	// A reconcile may run on a cache that has not seen the controller's own
	// last write yet; the API server then answers 409 and the retry finds
	// nothing to do. So only successful writes are counted exactly.
	ok := audit.Succeeded()
	assert.Equal(t, 1, audit.Count(firstSync, ok, audit.ByResource("apps", "deployments"), audit.ByVerb("create")), "one Deployment created")
	assert.Zero(t, audit.Count(firstSync, audit.ByResource("apps", "deployments"), audit.ByVerb("update", "patch", "delete")), "the new Deployment is not rewritten")
	statusUpdates := audit.Count(firstSync, ok, audit.ByResource("samplecontroller.k8s.io", "foos"), audit.BySubresource("status"))
	assert.GreaterOrEqual(t, statusUpdates, 2, "status updates: not Ready, then Ready")
	assert.Zero(t, audit.Count(firstSync, audit.ByResource("samplecontroller.k8s.io", "foos"), audit.BySubresource("")), "the Foo itself is never written")
	evs := h.fooEvents("example-foo")
	assert.Zero(t, eventCount(evs, corev1.EventTypeNormal, foo.ReasonSynced), "creating and mirroring are in the status, not in events")
	assert.Zero(t, audit.Count(firstSync, audit.ByResource("", "events")), "no event is written")
	assert.Zero(t, eventCount(evs, corev1.EventTypeWarning, samplev1alpha1.ReasonErrResourceExists))

	// Idle: at least one full resync period, with resyncs reconciling the
	// Foo again, writes nothing at all.
	idleStart := time.Now()
	before, errorsBefore := h.probe.reconciles.Load(), h.probe.errors.Load()
	require.Eventually(t, func() bool {
		return time.Since(idleStart) > resync+resync/2 && h.probe.reconciles.Load() >= before+2
	}, waitTimeout, pollEvery, "resyncs reconcile the Foo again")
	idleWrites := h.controllerWrites(idleStart)
	t.Logf("idle for %s: %d reconciles, %d write requests by the controller",
		time.Since(idleStart).Round(time.Millisecond), h.probe.reconciles.Load()-before, len(idleWrites))
	assert.Empty(t, audit.Lines(idleWrites), "an idle resync writes nothing")
	assert.Equal(t, errorsBefore, h.probe.errors.Load(), "idle reconciles succeed")
	assert.Zero(t, eventCount(h.fooEvents("example-foo"), corev1.EventTypeNormal, foo.ReasonSynced), "no Synced event without a change")
}

// TestDriftCorrected changes the Deployment behind the controller's back.
func TestDriftCorrected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	f := h.createFoo("drift", "drift-web", ptr.To[int32](2))
	h.waitDeployment("drift-web")
	h.makeAvailable("drift-web")
	h.waitReady("drift", 2)
	h.waitQuiet("drift")
	synced := eventCount(h.fooEvents("drift"), corev1.EventTypeNormal, foo.ReasonSynced)

	tests := []struct {
		name  string
		drift func(*appsv1.Deployment)
	}{
		{"replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
		{"image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.0" }},
		{"its container replaced by another", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "sidecar", Image: "busybox"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := time.Now()
			drifted := h.updateDeployment("drift-web", tt.drift)
			var d *appsv1.Deployment
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				var err error
				d, err = h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "drift-web", metav1.GetOptions{})
				require.NoError(c, err)
				assert.NotEqual(c, drifted.ResourceVersion, d.ResourceVersion)
			}, waitTimeout, pollEvery, "the controller corrects the Deployment")
			assertControlledDeployment(t, d, f, 2)
			// Exactly one successful patch (the Deployments' cache is
			// trimmed, so nothing is sent whole); a 409 from a reconcile on
			// a cache without the controller's own patch is allowed.
			writes := h.controllerWrites(changed, audit.ByResource("apps", "deployments"))
			assert.Equal(t, []string{controllerUser + " patch deployments.apps " + h.ns + "/drift-web -> 200"},
				audit.Lines(audit.Select(writes, audit.Succeeded())))
			assert.Equal(t, len(writes), audit.Count(writes, audit.ByVerb("patch"), audit.ByObject(h.ns, "drift-web")), "%v", audit.Lines(writes))

			h.makeAvailable("drift-web")
			h.waitReady("drift", 2)
			h.waitQuiet("drift")
			now := eventCount(h.fooEvents("drift"), corev1.EventTypeNormal, foo.ReasonSynced)
			assert.Greater(t, now, synced, "a correction is a change: Synced")
			synced = now
		})
	}

	// The controller neither caches nor corrects its pod labels: the API
	// server keeps them matching the selector, which cannot change.
	t.Run("its pod labels cannot drift", func(t *testing.T) {
		for name, drift := range map[string]func(*appsv1.Deployment){
			"a pod label removed":  func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, "controller") },
			"a pod label changed":  func(d *appsv1.Deployment) { d.Spec.Template.Labels["app"] = "other" },
			"the selector changed": func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["app"] = "other" },
		} {
			d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "drift-web", metav1.GetOptions{})
			require.NoError(t, err)
			drift(d)
			_, err = h.kube.AppsV1().Deployments(h.ns).Update(t.Context(), d, metav1.UpdateOptions{})
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
		}
	})

	// Labels only: a Deployment's generation (and so its readiness) also
	// changes with its annotations.
	t.Run("labels others add are left alone", func(t *testing.T) {
		changed := time.Now()
		before := h.probe.reconciles.Load()
		h.updateDeployment("drift-web", func(d *appsv1.Deployment) {
			d.Labels = map[string]string{"tier": "frontend"}
		})
		h.probe.waitReconciles(t, before, 1, "the change is reconciled")
		h.waitQuiet("drift")
		assert.Empty(t, audit.Lines(h.controllerWrites(changed)), "nothing is written when everything matches")
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "drift-web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "frontend", d.Labels["tier"])
	})

	t.Run("a sidecar and a pod label others add are left alone", func(t *testing.T) {
		changed := time.Now()
		before := h.probe.reconciles.Load()
		h.updateDeployment("drift-web", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1"})
			d.Spec.Template.Labels["team"] = "payments"
		})
		h.probe.waitReconciles(t, before, 1, "the change is reconciled")
		h.makeAvailable("drift-web")
		h.waitReady("drift", 2)
		h.waitQuiet("drift")
		assert.Empty(t, audit.Lines(h.controllerWrites(changed, audit.ByResource("apps", "deployments"))), "the Deployment is not rewritten")
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "drift-web", metav1.GetOptions{})
		require.NoError(t, err)
		var names []string
		for _, c := range d.Spec.Template.Spec.Containers {
			names = append(names, c.Name)
		}
		assert.Contains(t, names, "proxy")
		assert.Contains(t, names, "nginx")
		assert.Equal(t, "payments", d.Spec.Template.Labels["team"])
	})

	t.Run("spec fields and annotations the controller does not set are left alone", func(t *testing.T) {
		changed := time.Now()
		before := h.probe.reconciles.Load()
		h.updateDeployment("drift-web", func(d *appsv1.Deployment) {
			d.Annotations = map[string]string{"example.com/owner-team": "web"}
			d.Spec.RevisionHistoryLimit = ptr.To[int32](3)
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		})
		h.probe.waitReconciles(t, before, 1, "the change is reconciled")
		// A new generation the deployment controller has not observed yet:
		// the Foo is not Ready until it has.
		h.waitFooStatus("drift", "not Ready while the new generation rolls out", func(c *assert.CollectT, f *samplev1alpha1.Foo) {
			assert.False(c, meta.IsStatusConditionTrue(f.Status.Conditions, samplev1alpha1.ConditionReady))
		})
		h.makeAvailable("drift-web")
		h.waitReady("drift", 2)
		h.waitQuiet("drift")
		assert.Empty(t, audit.Lines(h.controllerWrites(changed, audit.ByResource("apps", "deployments"))), "the Deployment is not rewritten")
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "drift-web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, ptr.To[int32](3), d.Spec.RevisionHistoryLimit)
		assert.Equal(t, ptr.To[int64](5), d.Spec.Template.Spec.TerminationGracePeriodSeconds)
		assert.Equal(t, "web", d.Annotations["example.com/owner-team"])
	})
}

// TestForeignDeployment gives a Foo the name of a Deployment somebody else
// runs.
func TestForeignDeployment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	labels := map[string]string{"app": "theirs"}
	theirs, err := h.kube.AppsV1().Deployments(h.ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/theirs:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	start := time.Now()

	h.createFoo("claimer", "taken", ptr.To[int32](2))
	wantMsg := fmt.Sprintf(foo.MessageResourceExists, "taken")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		evs := h.fooEvents("claimer")
		var warnings []corev1.Event
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning {
				warnings = append(warnings, e)
			}
		}
		if assert.Len(c, warnings, 1) {
			w := warnings[0]
			assert.Equal(c, samplev1alpha1.ReasonErrResourceExists, w.Reason)
			assert.Equal(c, wantMsg, w.Message)
			assert.Equal(c, foo.ControllerName, w.Source.Component)
			assert.Equal(c, "samplecontroller.k8s.io/v1alpha1", w.InvolvedObject.APIVersion)
		}
	}, waitTimeout, pollEvery, "a Warning event about the foreign Deployment")
	h.waitFooStatus("claimer", "Ready=False with reason ErrResourceExists", func(c *assert.CollectT, f *samplev1alpha1.Foo) {
		assert.Equal(c, f.Generation, f.Status.ObservedGeneration)
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonErrResourceExists, cond.Reason)
			assert.Equal(c, wantMsg, cond.Message)
		}
	})
	// It does not retry: the Deployment watch tells it when the name is
	// free. A change of the Foo that leaves its spec alone is reconciled
	// without a second report.
	before := h.probe.reconciles.Load()
	h.updateFoo("claimer", func(f *samplev1alpha1.Foo) { f.Labels = map[string]string{"touched": "yes"} })
	h.probe.waitReconciles(t, before, 1, "the change is reconciled")
	h.waitQuiet("claimer")
	assert.Equal(t, int64(1), h.probe.errors.Load(), "the refusal is reported once and not retried")
	assert.Len(t, h.fooEvents("claimer"), 1, "one Warning event")

	now, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "taken", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, theirs.ResourceVersion, now.ResourceVersion, "the foreign Deployment is untouched")
	assert.Equal(t, theirs.Generation, now.Generation)
	assert.Empty(t, now.OwnerReferences)
	assert.Empty(t, audit.Lines(h.controllerWrites(start, audit.ByResource("apps", "deployments"))), "no write to any Deployment")

	// The owner removes it: the Foo gets its own.
	require.NoError(t, h.kube.AppsV1().Deployments(h.ns).Delete(t.Context(), "taken", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "taken", metav1.GetOptions{})
		require.NoError(c, err)
		assert.NotEqual(c, theirs.UID, d.UID)
	}, waitTimeout, pollEvery, "the Foo's own Deployment is created once the name is free")
	assertControlledDeployment(t, h.waitDeployment("taken"), h.getFoo("claimer"), 2)
	h.makeAvailable("taken")
	h.waitReady("claimer", 2)
}

// TestRename changes spec.deploymentName.
func TestRename(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.createFoo("renamer", "first", ptr.To[int32](1))
	h.waitDeployment("first")
	h.makeAvailable("first")
	h.waitReady("renamer", 1)
	h.waitQuiet("renamer")

	renamed := time.Now()
	f := h.updateFoo("renamer", func(f *samplev1alpha1.Foo) { f.Spec.DeploymentName = "second" })
	second := h.waitDeployment("second")
	assertControlledDeployment(t, second, f, 1)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "first", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "want NotFound, got %v", err)
	}, waitTimeout, pollEvery, "the old Deployment is deleted")
	h.waitFooStatus("renamer", "reports on the new Deployment", func(c *assert.CollectT, got *samplev1alpha1.Foo) {
		assert.Equal(c, f.Generation, got.Status.ObservedGeneration)
		cond := meta.FindStatusCondition(got.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond) {
			assert.Equal(c, `Deployment "second" has 0 of 1 replicas available`, cond.Message)
		}
	})
	h.makeAvailable("second")
	h.waitReady("renamer", 1)
	h.waitQuiet("renamer")

	writes := h.controllerWrites(renamed, audit.ByResource("apps", "deployments"), audit.Succeeded())
	assert.ElementsMatch(t, []string{
		controllerUser + " create deployments.apps " + h.ns + "/second -> 201",
		controllerUser + " delete deployments.apps " + h.ns + "/first -> 200",
	}, audit.Lines(writes))
}

// TestDeletedDeploymentRecreated deletes the Deployment behind the
// controller's back.
func TestDeletedDeploymentRecreated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	f := h.createFoo("phoenix", "phoenix", ptr.To[int32](1))
	old := h.waitDeployment("phoenix")
	h.makeAvailable("phoenix")
	h.waitReady("phoenix", 1)

	require.NoError(t, h.kube.AppsV1().Deployments(h.ns).Delete(t.Context(), "phoenix", metav1.DeleteOptions{}))
	var recreated *appsv1.Deployment
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		recreated, err = h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "phoenix", metav1.GetOptions{})
		require.NoError(c, err)
		assert.NotEqual(c, old.UID, recreated.UID)
	}, waitTimeout, pollEvery, "the Deployment is recreated")
	assertControlledDeployment(t, recreated, f, 1)
	// Its status starts empty: the Foo is not Ready until it is available.
	h.waitFooStatus("phoenix", "not Ready with the new Deployment", func(c *assert.CollectT, f *samplev1alpha1.Foo) {
		assert.Zero(c, f.Status.AvailableReplicas)
		assert.False(c, meta.IsStatusConditionTrue(f.Status.Conditions, samplev1alpha1.ConditionReady))
	})
	h.makeAvailable("phoenix")
	h.waitReady("phoenix", 1)
}

// TestDeletedFooDroppedQuietly deletes a Foo. There is no garbage collector
// in this control plane, so its Deployment stays; the controller itself
// neither deletes it nor writes anything else.
func TestDeletedFooDroppedQuietly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.createFoo("doomed", "doomed", ptr.To[int32](1))
	h.waitDeployment("doomed")
	h.makeAvailable("doomed")
	h.waitReady("doomed", 1)
	h.waitQuiet("doomed")

	deleted := time.Now()
	before, errorsBefore := h.probe.reconciles.Load(), h.probe.errors.Load()
	require.NoError(t, h.foos.SamplecontrollerV1alpha1().Foos(h.ns).Delete(t.Context(), "doomed", metav1.DeleteOptions{}))
	h.probe.waitReconciles(t, before, 1, "the deletion is reconciled")
	require.Eventually(t, func() bool {
		_, err := h.fooLister.Foos(h.ns).Get("doomed")
		return apierrors.IsNotFound(err) && h.probe.depth.Load() == 0 && h.probe.active.Load() == 0
	}, waitTimeout, pollEvery, "the controller settles")

	assert.Equal(t, errorsBefore, h.probe.errors.Load(), "a deleted Foo is not an error")
	assert.Empty(t, audit.Lines(h.controllerWrites(deleted)), "nothing written for a deleted Foo")
	d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "doomed", metav1.GetOptions{})
	require.NoError(t, err, "the Deployment is left to garbage collection")
	assert.Len(t, d.OwnerReferences, 1)
	for _, e := range h.fooEvents("doomed") {
		assert.NotEqual(t, corev1.EventTypeWarning, e.Type, "no warning: %s %s", e.Reason, e.Message)
	}
}

// interferer writes the Foo's status as the admin right before the
// controller's first status update of that Foo reaches the API server, so
// that update carries a stale resourceVersion and gets 409 Conflict.
type interferer struct {
	next    http.RoundTripper
	fooName string
	once    atomic.Bool
	hit     func(namespace string) error
	err     atomic.Value
}

func (i *interferer) RoundTrip(req *http.Request) (*http.Response, error) {
	// .../namespaces/<ns>/foos/<name>/status
	parts := strings.Split(req.URL.Path, "/")
	n := len(parts)
	if req.Method == http.MethodPut && n >= 5 && parts[n-1] == "status" && parts[n-2] == i.fooName &&
		parts[n-3] == "foos" && parts[n-5] == "namespaces" && i.once.CompareAndSwap(false, true) {
		if err := i.hit(parts[n-4]); err != nil {
			i.err.Store(err)
		}
	}
	return i.next.RoundTrip(req)
}

// TestStatusConflictSurvived makes the controller's status update collide
// with a concurrent writer and checks that it converges anyway.
func TestStatusConflictSurvived(t *testing.T) {
	t.Parallel()
	_, adminFoos := adminClients(t)
	i := &interferer{fooName: "racer"}
	i.hit = func(ns string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			f, err := adminFoos.SamplecontrollerV1alpha1().Foos(ns).Get(t.Context(), "racer", metav1.GetOptions{})
			if err != nil {
				return err
			}
			f.Status.AvailableReplicas = 42
			_, err = adminFoos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(t.Context(), f, metav1.UpdateOptions{})
			return err
		})
	}
	h := newHarness(t, harnessOptions{wrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		i.next = rt
		return i
	}})
	h.createFoo("racer", "racer", ptr.To[int32](1))
	h.waitDeployment("racer")
	h.makeAvailable("racer")
	h.waitReady("racer", 1) // not 42: the controller's view won
	h.waitQuiet("racer")
	require.True(t, i.once.Load(), "the interfering write happened")
	require.Nil(t, i.err.Load(), "the interfering write succeeded")

	statusWrites := h.controllerRequests(audit.Writes(), audit.ByResource("samplecontroller.k8s.io", "foos"), audit.ByObject(h.ns, "racer"))
	t.Logf("status writes of the controller: %v", audit.Lines(statusWrites))
	require.NotEmpty(t, statusWrites)
	assert.Equal(t, 409, statusWrites[0].Code, "the first status update conflicts")
	assert.Positive(t, audit.Count(statusWrites[1:], audit.ByCode(200)), "a later one succeeds")
	all, err := cp.AuditEvents()
	require.NoError(t, err)
	adminStatus := audit.Select(all, audit.ByUser(controlplane.AdminUser), audit.ByVerb("update"),
		audit.ByResource("samplecontroller.k8s.io", "foos"), audit.ByObject(h.ns, "racer"), audit.BySubresource("status"))
	require.Len(t, adminStatus, 1, "the interfering write")
	assert.Equal(t, 200, adminStatus[0].Code)
	// Quiet while the cache has not seen the interfering write, counted
	// as a conflict once it has: either way the key is retried once.
	assert.GreaterOrEqual(t, h.probe.requeues.Load()+h.probe.errors.Load(), int64(1), "the conflict was retried")
}
