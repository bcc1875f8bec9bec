package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// biWindow is how long TestBadInput watches refused Foos for further
// attempts after their refusal. Retrying with backoff would make about ten
// attempts in it (5 ms doubling); a refusal is not retried.
const biWindow = 5 * time.Second

// biMaxReports is how many times a refused Foo may be reported: once, and
// once more if the status write of the first report lost a race with
// another write of the Foo (a 409, which is retried).
const biMaxReports = 2

// TestBadInput feeds the real API server bad Foos. Most bad specs never
// reach the controller: the CRD schema rejects them. The rest (conflicts
// over a Deployment, renames, deletions at awkward moments) get a Warning
// event and Ready=False where a Foo exists, no write to anything the Foo
// does not own, and no retries: the Foo is reconciled again when what it
// depends on changes.
func TestBadInput(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	const user = "foo-badinput"
	r := newRelRig(t, relOptions(user))
	ctx := t.Context()
	r.grantControllerRoles(user)
	ns := r.createNamespace("bad")
	foos := r.foos.SamplecontrollerV1alpha1().Foos(ns)

	t.Run("the CRD schema rejects invalid specs", func(t *testing.T) {
		long := strings.Repeat("a", samplev1alpha1.DeploymentNameMaxLength+1)
		tests := []struct {
			name    string
			body    string
			wantMsg string
		}{
			{"empty deploymentName", `{"spec":{"deploymentName":"","replicas":1}}`, "spec.deploymentName"},
			{"missing deploymentName", `{"spec":{"replicas":1}}`, "spec.deploymentName: Required value"},
			{"missing spec", `{}`, "spec: Required value"},
			{"deploymentName with capitals and underscore", `{"spec":{"deploymentName":"Not_A_Name","replicas":1}}`, "spec.deploymentName"},
			{"deploymentName ending in a dash", `{"spec":{"deploymentName":"web-","replicas":1}}`, "spec.deploymentName"},
			{"deploymentName too long", `{"spec":{"deploymentName":"` + long + `","replicas":1}}`, "spec.deploymentName: Too long"},
			{"deploymentName not a string", `{"spec":{"deploymentName":42,"replicas":1}}`, "spec.deploymentName"},
			{"negative replicas", `{"spec":{"deploymentName":"web","replicas":-1}}`, "spec.replicas"},
			{"replicas above the maximum", `{"spec":{"deploymentName":"web","replicas":1001}}`, "spec.replicas"},
			{"replicas beyond int32", `{"spec":{"deploymentName":"web","replicas":2147483648}}`, "spec.replicas"},
			{"fractional replicas", `{"spec":{"deploymentName":"web","replicas":1.5}}`, "spec.replicas"},
		}
		for i, tt := range tests {
			name := fmt.Sprintf("invalid-%d", i)
			obj := map[string]any{}
			require.NoError(t, json.Unmarshal([]byte(tt.body), &obj), tt.name)
			obj["apiVersion"], obj["kind"] = samplev1alpha1.SchemeGroupVersion.String(), "Foo"
			obj["metadata"] = map[string]any{"name": name}
			body, err := json.Marshal(obj)
			require.NoError(t, err)
			err = r.foos.SamplecontrollerV1alpha1().RESTClient().Post().Namespace(ns).Resource("foos").
				Body(body).Do(ctx).Error()
			if assert.Error(t, err, "%s: created", tt.name) {
				assert.True(t, apierrors.IsInvalid(err) || apierrors.IsBadRequest(err), "%s: want 422 or 400, got %v", tt.name, err)
				assert.Contains(t, err.Error(), tt.wantMsg, tt.name)
				t.Logf("%s: %v", tt.name, err)
			}
			_, err = foos.Get(ctx, name, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "%s: no Foo stored", tt.name)
		}

		// Updates go through the same schema: the spec and the scale
		// subresource.
		f, err := foos.Create(ctx, relNewFoo("valid", "valid", 1), metav1.CreateOptions{})
		require.NoError(t, err)
		f.Spec.Replicas = ptr.To[int32](-5)
		_, err = foos.Update(ctx, f, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsInvalid(err), "update to negative replicas: want 422, got %v", err)
		f.Spec.Replicas, f.Spec.DeploymentName = ptr.To[int32](1), "UPPER"
		_, err = foos.Update(ctx, f, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsInvalid(err), "update to an invalid name: want 422, got %v", err)
		scale := autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Name: "valid", Namespace: ns},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 5000},
		}
		body, err := json.Marshal(&scale)
		require.NoError(t, err)
		err = r.foos.SamplecontrollerV1alpha1().RESTClient().Put().Namespace(ns).Resource("foos").Name("valid").
			SubResource("scale").Body(body).Do(ctx).Error()
		assert.True(t, apierrors.IsInvalid(err), "scale to 5000: want 422, got %v", err)
		t.Logf("scale to 5000: %v", err)
		require.NoError(t, foos.Delete(ctx, "valid", metav1.DeleteOptions{}))
	})

	ctrl := r.startFoo(t, "foo", r.userKubeconfig(user), "--workers=2", "--resync=10m", "--shutdown-timeout=10s")
	relWaitReadyz(t, ctrl)

	// refused are the Foos the controller refuses and retries, with the
	// time each was created or changed to its bad spec.
	type refusal struct {
		name  string
		since time.Time
	}
	var refused []refusal
	// untouchable are Deployments the controller must not write from the
	// given time on.
	untouchable := map[string]time.Time{}

	t.Run("a Deployment owned by another Foo", func(t *testing.T) {
		_, kept := r.createConverged(t, ns, relNewFoo("keeper", "kept", 1))
		since := time.Now()
		thief, err := foos.Create(ctx, relNewFoo("thief", "kept", 3), metav1.CreateOptions{})
		require.NoError(t, err)
		refused = append(refused, refusal{"thief", since})
		untouchable["kept"] = since
		r.waitWarning(t, ns, thief, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(foo.MessageResourceExists, "kept"))
		r.waitFooRefused(t, ns, "thief", samplev1alpha1.ReasonErrResourceExists)

		now, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "kept", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, kept.Spec, now.Spec, "the Deployment keeps the keeper's spec (1 replica, not 3)")
		assert.Equal(t, kept.OwnerReferences, now.OwnerReferences)
		keeper, err := foos.Get(ctx, "keeper", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, relFooConverged(keeper), "the keeper stays Ready: %+v", keeper.Status)
	})

	t.Run("two Foos naming the same Deployment at once", func(t *testing.T) {
		since := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, name := range []string{"twin-a", "twin-b"} {
			wg.Go(func() {
				_, errs[i] = foos.Create(ctx, relNewFoo(name, "twin", 2), metav1.CreateOptions{})
			})
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		var winner, loser *samplev1alpha1.Foo
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "twin", metav1.GetOptions{})
			require.NoError(c, err)
			ref := metav1.GetControllerOf(d)
			require.NotNil(c, ref)
			a, err := foos.Get(ctx, "twin-a", metav1.GetOptions{})
			require.NoError(c, err)
			b, err := foos.Get(ctx, "twin-b", metav1.GetOptions{})
			require.NoError(c, err)
			winner, loser = a, b
			if ref.UID == b.UID {
				winner, loser = b, a
			}
			require.Equal(c, winner.UID, ref.UID)
		}, waitTimeout, relPoll, "one of the twins controls the Deployment")
		r.waitFooConverged(t, ns, winner.Name, waitTimeout)
		refused = append(refused, refusal{loser.Name, since})
		untouchable["twin"] = time.Now()
		r.waitWarning(t, ns, loser, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(foo.MessageResourceExists, "twin"))
		r.waitFooRefused(t, ns, loser.Name, samplev1alpha1.ReasonErrResourceExists)
		t.Logf("%s won the Deployment, %s was refused", winner.Name, loser.Name)

		creates := audit.Select(r.auditLog(), audit.ByUser(user), audit.ByVerb("create"), audit.ByResource("apps", "deployments"), audit.ByObject(ns, "twin"))
		assert.Equal(t, 1, audit.Count(creates, audit.Succeeded()), "created once: %v", audit.Lines(creates))
		for _, e := range creates {
			assert.Contains(t, []int{201, 409}, e.Code, "%s", e)
		}
	})

	t.Run("deploymentName changed", func(t *testing.T) {
		f, old := r.createConverged(t, ns, relNewFoo("mover", "mover-a", 1))
		changed := time.Now()
		f.Spec.DeploymentName = "mover-b"
		_, err := foos.Update(ctx, f, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, d := r.waitFooConverged(t, ns, "mover", waitTimeout)
		assert.Equal(t, "mover-b", d.Name)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "mover-a", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "the old Deployment goes: %v", err)
		}, waitTimeout, relPoll)
		deletes := audit.Select(r.auditLog(), audit.ByUser(user), audit.ByVerb("delete"), audit.ByResource("apps", "deployments"), audit.Since(changed))
		assert.Equal(t, []string{"mover-a"}, relNames(audit.Select(deletes, audit.Succeeded())), "the controller deletes the renamed-away Deployment (uid %s), and only it", old.UID)
		assert.Empty(t, r.fooEvents(t, ctx, ns, "mover", corev1.EventTypeWarning), "a rename is no error")
	})

	t.Run("deploymentName changed to a Deployment owned by another Foo", func(t *testing.T) {
		f, old := r.createConverged(t, ns, relNewFoo("hopper", "hopper-a", 1))
		since := time.Now()
		f.Spec.DeploymentName = "kept"
		f, err := foos.Update(ctx, f, metav1.UpdateOptions{})
		require.NoError(t, err)
		refused = append(refused, refusal{"hopper", since})
		r.waitWarning(t, ns, f, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(foo.MessageResourceExists, "kept"))
		r.waitFooRefused(t, ns, "hopper", samplev1alpha1.ReasonErrResourceExists)
		now, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "hopper-a", metav1.GetOptions{})
		require.NoError(t, err, "the old Deployment stays until the new one is in place")
		assert.Equal(t, old.UID, now.UID)
		assert.True(t, relControlledBy(now, f))
	})

	t.Run("Foos deleted mid-reconcile", func(t *testing.T) {
		const n = 10
		for i := range n {
			name := fmt.Sprintf("ghost-%d", i)
			_, err := foos.Create(ctx, relNewFoo(name, name, 1), metav1.CreateOptions{})
			require.NoError(t, err)
			require.NoError(t, foos.Delete(ctx, name, metav1.DeleteOptions{}))
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			list, err := foos.List(ctx, metav1.ListOptions{})
			require.NoError(c, err)
			for _, f := range list.Items {
				assert.False(c, strings.HasPrefix(f.Name, "ghost-"), "Foo %s left", f.Name)
			}
			deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			require.NoError(c, err)
			for _, d := range deps.Items {
				assert.False(c, strings.HasPrefix(d.Name, "ghost-"), "Deployment %s left", d.Name)
			}
		}, waitTimeout, relPoll, "no Foo and no Deployment of a deleted Foo is left")
		events := r.auditLog()
		for i := range n {
			name := fmt.Sprintf("ghost-%d", i)
			reqs := audit.Select(events, audit.ByUser(user), audit.Writes(), relAboutFoo(name, name))
			assert.LessOrEqual(t, len(reqs), 4, "%s: at most a Deployment create, two status updates and an event: %v", name, audit.Lines(reqs))
			assert.LessOrEqual(t, audit.Count(reqs, audit.ByResource("apps", "deployments"), audit.Succeeded()), 1, name)
			warnings := r.fooEvents(t, ctx, ns, name, corev1.EventTypeWarning)
			assert.Empty(t, warnings, "%s: a deleted Foo is no error", name)
		}
		t.Logf("writes for 10 Foos deleted right after creation: %s",
			audit.FormatTally(audit.Tally(audit.Select(events, audit.ByUser(user), audit.Writes(), relAboutGhosts()))))
	})

	t.Run("Deployment deleted, then changed by someone else", func(t *testing.T) {
		_, d := r.createConverged(t, ns, relNewFoo("phoenix", "phoenix", 2))
		deleted := time.Now()
		require.NoError(t, r.kube.AppsV1().Deployments(ns).Delete(ctx, "phoenix", metav1.DeleteOptions{}))
		_, again := r.waitFooConvergedWith(t, ns, "phoenix", func(c *assert.CollectT, d2 *appsv1.Deployment) {
			assert.NotEqual(c, d.UID, d2.UID, "a new Deployment")
		})
		creates := audit.Select(r.auditLog(), audit.ByUser(user), audit.ByVerb("create"), audit.ByResource("apps", "deployments"), audit.ByObject(ns, "phoenix"), audit.Succeeded())
		require.Len(t, creates, 2, "created, then created again once: %v", audit.Lines(creates))
		assert.True(t, creates[1].Time.After(deleted))

		edited := time.Now()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := r.kube.AppsV1().Deployments(ns).Get(ctx, "phoenix", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Replicas = ptr.To[int32](5)
			cur.Spec.Template.Spec.Containers[0].Image = "busybox"
			_, err = r.kube.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
		r.waitFooConvergedWith(t, ns, "phoenix", func(c *assert.CollectT, d3 *appsv1.Deployment) {
			assert.Equal(c, "nginx:latest", d3.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(c, again.UID, d3.UID)
		})
		patches := audit.Select(r.auditLog(), audit.ByUser(user), audit.ByVerb("patch"), audit.ByResource("apps", "deployments"), audit.ByObject(ns, "phoenix"), audit.Since(edited))
		assert.Equal(t, 1, audit.Count(patches, audit.Succeeded()), "corrected once: %v", audit.Lines(patches))
		assert.Empty(t, r.fooEvents(t, ctx, ns, "phoenix", corev1.EventTypeWarning))
	})

	// No retries: watch the refused Foos for a while after everything
	// above is done; each is reported at most twice (see biMaxReports), and
	// the controller writes (nearly) nothing in the window.
	watched := time.Now()
	measure := time.NewTimer(biWindow)
	<-measure.C // the measurement window, not a synchronisation
	events := r.auditLog()
	measured := time.Now()
	for _, ref := range refused {
		var attempts int32
		for _, e := range r.fooEvents(t, ctx, ns, ref.name, corev1.EventTypeWarning) {
			if e.Reason == samplev1alpha1.ReasonErrResourceExists {
				attempts += e.Count
			}
		}
		reqs := audit.Select(events, audit.ByUser(user), relAboutFoo(ref.name, ""), audit.Since(ref.since))
		t.Logf("%s: reported %d times in %s; %d requests: %s",
			ref.name, attempts, measured.Sub(ref.since).Round(time.Millisecond), len(reqs), audit.FormatTally(audit.Tally(reqs)))
		assert.GreaterOrEqual(t, attempts, int32(1), "%s is reported", ref.name)
		assert.LessOrEqual(t, int(attempts), biMaxReports, "%s is not retried", ref.name)
		assert.LessOrEqual(t, len(reqs), 3*biMaxReports, "%s: requests", ref.name)
	}
	quiet := audit.Select(events, audit.ByUser(user), audit.Writes(), audit.Since(watched))
	t.Logf("writes by the controller in the last %s: %d (%s)", measured.Sub(watched).Round(time.Millisecond), len(quiet), audit.FormatTally(audit.Tally(quiet)))
	assert.LessOrEqual(t, len(quiet), len(refused), "the controller is nearly idle: %v", audit.Lines(quiet))

	// Nothing the controller does not own was written.
	for name, since := range untouchable {
		writes := audit.Select(events, audit.ByUser(user), audit.Writes(), audit.ByResource("apps", "deployments"), audit.ByObject(ns, name), audit.Since(since))
		assert.Empty(t, audit.Lines(writes), "no write to %s once another Foo claims it", name)
	}
	var foreign []audit.Event
	for _, e := range audit.Select(events, audit.ByUser(user), audit.Writes(), audit.Succeeded()) {
		switch {
		case e.Resource == "events" && e.Namespace == ns,
			e.Resource == "foos" && e.Subresource == "status" && e.Namespace == ns,
			e.Resource == "deployments" && e.Namespace == ns:
		default:
			foreign = append(foreign, e)
		}
	}
	assert.Empty(t, audit.Lines(foreign), "the controller writes only Deployments, Foo status and events in the Foos' namespace")

	relTerminate(t, ctrl, 20*time.Second)
	relAssertNoDataRace(t, ctrl)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// createConverged creates the Foo and waits until it converged.
func (r *relRig) createConverged(t *testing.T, ns string, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, *appsv1.Deployment) {
	t.Helper()
	_, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(t.Context(), f, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.waitFooConverged(t, ns, f.Name, waitTimeout)
}

// waitFooConvergedWith waits until the Foo converged and its Deployment
// also passes check.
func (r *relRig) waitFooConvergedWith(t *testing.T, ns, name string, check func(*assert.CollectT, *appsv1.Deployment)) (*samplev1alpha1.Foo, *appsv1.Deployment) {
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
		require.True(c, relControlledBy(d, f))
		assert.Equal(c, *f.Spec.Replicas, ptr.Deref(d.Spec.Replicas, -1))
		// Settled, not only available: a rollout still under way (surge
		// pods, an old ReplicaSet scaling down) changes the available
		// replicas again, and the Foo's status with them.
		assert.Equal(c, d.Generation, d.Status.ObservedGeneration, "the Deployment's rollout is observed")
		assert.Equal(c, []int32{*f.Spec.Replicas, *f.Spec.Replicas, *f.Spec.Replicas},
			[]int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas}, "the Deployment's replicas, updated and available")
		assert.Equal(c, d.Status.AvailableReplicas, f.Status.AvailableReplicas, "the status mirrors the settled Deployment")
		check(c, d)
	}, waitTimeout, relPoll, "Foo %s/%s converges", ns, name)
	return f, d
}

// relAboutFoo selects requests on the Foo (its status), on its events and,
// if deployment is not empty, on that Deployment.
func relAboutFoo(name, deployment string) audit.Filter {
	events := relEventsAbout(name)
	return func(e audit.Event) bool {
		switch {
		case events(e):
			return true
		case e.Resource == "foos" && e.Name == name:
			return true
		case deployment != "" && e.Resource == "deployments" && e.Name == deployment:
			return true
		}
		return false
	}
}

// relAboutGhosts selects requests on the ghost-* Foos of TestBadInput.
func relAboutGhosts() audit.Filter {
	return func(e audit.Event) bool { return strings.HasPrefix(e.Name, "ghost-") }
}

// relNames returns the object names of audit events.
func relNames(evs []audit.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}
