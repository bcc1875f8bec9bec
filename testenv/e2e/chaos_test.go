package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

const (
	// chaosFoos are created at once; every chaosForeignEvery-th of them
	// names a Deployment that exists already and belongs to nobody.
	chaosFoos         = 500
	chaosForeignEvery = 100
	chaosUser         = "foo-chaos"
	// chaosTimeout bounds the convergence, chaos included. Each restart
	// of the API server costs a relist of everything; on a loaded
	// machine the three steps alone have taken three minutes.
	chaosTimeout = 8 * time.Minute
)

// chaosFoo is one Foo of TestChaos.
type chaosFoo struct {
	name, deployment string
	replicas         int32
	foreign          bool
}

// chaosProgress is what one look at the cluster shows.
type chaosProgress struct {
	// created counts Foos (not naming a foreign Deployment) whose
	// Deployment exists and is controlled by them; converged counts those
	// that also converged (Ready=True, replicas available).
	created, converged int
	// refused counts Foos naming a foreign Deployment that report
	// Ready=False with ErrResourceExists.
	refused int
	// normal and foreign are the totals of both kinds.
	normal, foreign int
}

func (p chaosProgress) done() bool { return p.converged == p.normal && p.refused == p.foreign }

func (p chaosProgress) String() string {
	return fmt.Sprintf("%d/%d Deployments created, %d/%d Foos converged, %d/%d refused", p.created, p.normal, p.converged, p.normal, p.refused, p.foreign)
}

// TestChaos creates 500 Foos at once on the full control plane and, while
// they converge, kills the kube-apiserver (twice) and the controller (twice)
// with SIGKILL and starts them again. Every Foo converges, no Deployment is
// created twice, Deployments that belong to nobody are never written, and
// no Foo is left behind.
func TestChaos(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	// The control plane raises kube-controller-manager's client limits, so
	// 500 Foos wait for the Foo controller, not for its deployment controller.
	r := newRelRig(t, relOptions(chaosUser))
	ctx := t.Context()
	r.grantControllerRoles(chaosUser)
	ns := r.createNamespace("chaos")
	kubeconfig := r.userKubeconfig(chaosUser)

	foos := make([]chaosFoo, chaosFoos)
	byDeployment := map[string]chaosFoo{}
	for i := range foos {
		f := chaosFoo{name: fmt.Sprintf("foo-%03d", i), replicas: int32(i % 3)}
		f.deployment = f.name + "-web"
		if i%chaosForeignEvery == chaosForeignEvery/2 {
			f.deployment, f.foreign = fmt.Sprintf("foreign-%d", i/chaosForeignEvery), true
		}
		foos[i] = f
		byDeployment[f.deployment] = f
	}

	// Deployments that belong to nobody, settled before the Foos arrive.
	foreign := map[string]*appsv1.Deployment{}
	for _, f := range foos {
		if !f.foreign {
			continue
		}
		labels := map[string]string{"app": f.deployment}
		_, err := r.kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: f.deployment, Labels: map[string]string{"owner": "someone-else"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "someone/else:1"}}},
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, f := range foos {
			if !f.foreign {
				continue
			}
			d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, f.deployment, metav1.GetOptions{})
			require.NoError(c, err)
			require.Equal(c, d.Generation, d.Status.ObservedGeneration)
			require.Equal(c, int32(1), d.Status.AvailableReplicas)
			progressing := deploymentCondition(d, appsv1.DeploymentProgressing)
			require.NotNil(c, progressing)
			require.Equal(c, "NewReplicaSetAvailable", progressing.Reason)
			foreign[f.deployment] = d
		}
	}, waitTimeout, relPoll, "the foreign Deployments settle")

	args := []string{"--workers=4", "--resync=5m", "--shutdown-timeout=10s"}
	var procs []*process
	startController := func() *process {
		p := r.startFoo(t, fmt.Sprintf("foo controller #%d", len(procs)+1), kubeconfig, args...)
		procs = append(procs, p)
		return p
	}
	ctrl := startController()
	relWaitReadyz(t, ctrl)

	// All Foos at once.
	created := time.Now()
	require.NoError(t, relParallel(len(foos), 25, func(i int) error {
		_, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, relNewFoo(foos[i].name, foos[i].deployment, foos[i].replicas), metav1.CreateOptions{})
		return err
	}))
	t.Logf("%d Foos created in %s", len(foos), time.Since(created).Round(time.Millisecond))

	// The chaos: each step runs once the cluster has got so far.
	var downtimes []time.Duration
	// restarts are the spans from each kill of the API server until the new
	// one was ready.
	var restarts [][2]time.Time
	restartAPIServer := func() {
		killed := time.Now()
		restartCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		downtime, err := r.cp.RestartAPIServer(restartCtx)
		require.NoError(t, err)
		downtimes = append(downtimes, downtime)
		restarts = append(restarts, [2]time.Time{killed, time.Now()})
	}
	steps := []struct {
		name string
		when func(chaosProgress) bool
		do   func()
	}{
		{"kill -9 the controller", func(p chaosProgress) bool { return p.created >= 100 }, func() {
			relKillHard(t, ctrl)
			ctrl = startController()
		}},
		{"kill -9 the kube-apiserver", func(p chaosProgress) bool { return p.created >= 250 || p.converged >= 50 }, restartAPIServer},
		{"kill -9 the controller", func(p chaosProgress) bool { return p.converged >= 150 }, func() {
			relKillHard(t, ctrl)
			ctrl = startController()
		}},
		{"kill -9 the kube-apiserver", func(p chaosProgress) bool { return p.converged >= 300 }, restartAPIServer},
	}
	next := 0
	var last chaosProgress
	var converged time.Time
	tick := time.NewTicker(2 * relPoll)
	defer tick.Stop()
	for {
		p, err := r.chaosLook(ns, foos)
		if err == nil {
			last = p
			if next < len(steps) && steps[next].when(p) {
				require.False(t, p.done(), "step %q came after convergence; the chaos must happen during it", steps[next].name)
				t.Logf("after %s (%s): %s", time.Since(created).Round(time.Millisecond), p, steps[next].name)
				steps[next].do()
				next++
				continue
			}
			if next == len(steps) && p.done() {
				converged = time.Now()
				break
			}
		}
		require.Less(t, time.Since(created), chaosTimeout, "convergence under chaos; last look: %s (error: %v)", last, err)
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	t.Logf("time to converge: %s from the first create until all %d Foos converged (%s), through 2 kube-apiserver kills (down %s) and 2 controller kills",
		converged.Sub(created).Round(time.Millisecond), len(foos), last, relFmtDurations(downtimes))
	relWaitReadyz(t, ctrl)

	t.Run("every Foo converged and owns its Deployment", func(t *testing.T) {
		fooList, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, fooList.Items, len(foos), "no Foo lost")
		require.Len(t, deps.Items, len(foos), "one Deployment per Foo, foreign ones included, and no other")
		depByName := map[string]*appsv1.Deployment{}
		for i := range deps.Items {
			depByName[deps.Items[i].Name] = &deps.Items[i]
		}
		for i := range fooList.Items {
			f := &fooList.Items[i]
			want, ok := byDeployment[f.Spec.DeploymentName]
			require.True(t, ok, "Foo %s", f.Name)
			require.Equal(t, want.name, f.Name)
			d := depByName[f.Spec.DeploymentName]
			require.NotNil(t, d, "Deployment of %s", f.Name)
			if want.foreign {
				assert.True(t, relFooRefused(f, samplev1alpha1.ReasonErrResourceExists), "%s: %+v", f.Name, f.Status)
				assert.Nil(t, metav1.GetControllerOf(d), "%s stays without an owner", d.Name)
				continue
			}
			assert.True(t, relFooConverged(f), "%s: %+v", f.Name, f.Status)
			assert.True(t, relControlledBy(d, f), "%s controlled by %s", d.Name, f.Name)
			assert.Equal(t, want.replicas, ptr.Deref(d.Spec.Replicas, -1), "%s replicas", d.Name)
			assert.Equal(t, d.Status.AvailableReplicas, f.Status.AvailableReplicas, "%s mirrors %s", f.Name, d.Name)
		}
	})

	t.Run("foreign Deployments are untouched", func(t *testing.T) {
		for name, before := range foreign {
			now, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, before.UID, now.UID, name)
			assert.Equal(t, before.Generation, now.Generation, name)
			assert.Equal(t, before.Spec, now.Spec, name)
			assert.Equal(t, before.Labels, now.Labels, name)
			assert.Empty(t, now.OwnerReferences, name)
			// Events reach the API server late after an outage: client-go's
			// event sink waits 10s before it tries again.
			f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, byDeployment[name].name, metav1.GetOptions{})
			require.NoError(t, err)
			r.waitWarning(t, ns, f, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(foo.MessageResourceExists, name))
		}
		events := r.auditLog()
		for name := range foreign {
			for _, e := range audit.Select(events, audit.ByUser(chaosUser), audit.Writes(), audit.ByResource("apps", "deployments"), audit.ByObject(ns, name)) {
				assert.True(t, e.Verb == "create" && e.Code == 409, "only a refused create may name %s: %s", name, e)
			}
		}
	})

	// A restarted API server serves requests before its RBAC caches are
	// filled, and denies them (without reading the body, so the audit
	// event names no object); the controller retries them like any error.
	duringStartup := func(e audit.Event) bool {
		for _, span := range restarts {
			if !e.Time.Before(span[0]) && !e.Time.After(span[1].Add(time.Second)) {
				return true
			}
		}
		return false
	}
	t.Run("requests are denied only while the API server starts", func(t *testing.T) {
		var denied, outside []audit.Event
		for _, e := range audit.Select(r.auditLog(), audit.ByUser(chaosUser)) {
			if e.Code == 401 || e.Code == 403 {
				denied = append(denied, e)
				if !duringStartup(e) {
					outside = append(outside, e)
				}
			}
		}
		assert.Empty(t, audit.Lines(outside), "denied outside an API server start-up")
		t.Logf("%d requests denied while the API server started: %s", len(denied), audit.FormatTally(audit.Tally(denied)))
	})

	t.Run("no Deployment is created twice", func(t *testing.T) {
		events := r.auditLog()
		var writes []audit.Event
		for _, e := range audit.Select(events, audit.ByUser(chaosUser), audit.Writes(), audit.ByResource("apps", "deployments")) {
			if (e.Code == 401 || e.Code == 403) && duringStartup(e) {
				continue // nothing was written, and the API server never saw the object
			}
			writes = append(writes, e)
		}
		okCreates, conflicts, failed := map[string]int{}, map[string]int{}, map[string]int{}
		for _, e := range writes {
			assert.Equal(t, ns, e.Namespace, "%s", e)
			if _, ok := byDeployment[e.Name]; !ok {
				t.Errorf("a write to a Deployment no Foo names: %s", e)
			}
			switch {
			case e.Verb == "create" && e.Code == 201:
				okCreates[e.Name]++
			case e.Verb == "create" && e.Code == 409:
				conflicts[e.Name]++
			case e.Verb == "create" && e.Code >= 500:
				failed[e.Name]++ // see below
			default:
				t.Errorf("an unexpected Deployment write: %s", e)
			}
		}
		// A create can be stored although its success response is lost:
		// answered 5xx when storage was slow, or cut off by the kill of the
		// API server (then it has no audit event at all, and the Deployment
		// was created just before the kill). The Deployment is there all
		// the same, and the controller goes on from its cache (or a 409).
		// With no Deployment ever deleted, one stored create per name is
		// all there can be.
		deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		createdAt := map[string]time.Time{}
		for _, d := range deps.Items {
			createdAt[d.Name] = d.CreationTimestamp.Time
		}
		var lost []string
		for _, f := range foos {
			if f.foreign {
				assert.Zero(t, okCreates[f.deployment], f.deployment)
				continue
			}
			assert.LessOrEqual(t, okCreates[f.deployment], 1, "%s created once", f.deployment)
			if okCreates[f.deployment] > 0 {
				continue
			}
			lost = append(lost, f.deployment)
			cutOff := false
			for _, span := range restarts {
				// creationTimestamp has whole seconds.
				at := createdAt[f.deployment]
				cutOff = cutOff || (!at.Before(span[0].Add(-5*time.Second)) && !at.After(span[0].Add(time.Second)))
			}
			assert.True(t, failed[f.deployment] > 0 || cutOff,
				"%s (created %s) was stored without a success response, but neither a failed create nor an API server kill explains it",
				f.deployment, createdAt[f.deployment].Format(time.TimeOnly))
		}
		deletes := audit.Select(events, audit.ByVerb("delete", "deletecollection"), audit.ByResource("apps", "deployments"), audit.ByNamespace(ns))
		assert.Empty(t, audit.Lines(deletes), "no Deployment was deleted (and so none could be created twice)")
		totalConflicts := 0
		for _, n := range conflicts {
			totalConflicts += n
		}
		t.Logf("Deployment creates by the controller: %d succeeded, %d refused with 409, %d stored without a success response (%s)",
			len(okCreates), totalConflicts, len(lost), strings.Join(lost, " "))
		all := audit.Select(events, audit.ByUser(chaosUser))
		t.Logf("all %d requests of the controller: %s", len(all), audit.FormatTally(audit.Tally(all)))
	})

	relTerminate(t, ctrl, 20*time.Second)
	relAssertNoDataRace(t, procs...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// chaosLook counts how far the Foos have got.
func (r *relRig) chaosLook(ns string, foos []chaosFoo) (chaosProgress, error) {
	ctx := r.t.Context()
	var p chaosProgress
	fooList, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, err
	}
	deps, err := r.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, err
	}
	fooByName := make(map[string]*samplev1alpha1.Foo, len(fooList.Items))
	for i := range fooList.Items {
		fooByName[fooList.Items[i].Name] = &fooList.Items[i]
	}
	depByName := make(map[string]*appsv1.Deployment, len(deps.Items))
	for i := range deps.Items {
		depByName[deps.Items[i].Name] = &deps.Items[i]
	}
	for _, want := range foos {
		f := fooByName[want.name]
		if want.foreign {
			p.foreign++
			if f != nil && relFooRefused(f, samplev1alpha1.ReasonErrResourceExists) {
				p.refused++
			}
			continue
		}
		p.normal++
		d := depByName[want.deployment]
		if f == nil || d == nil || !relControlledBy(d, f) {
			continue
		}
		p.created++
		if relFooConverged(f) && ptr.Deref(d.Spec.Replicas, -1) == want.replicas &&
			d.Status.AvailableReplicas == want.replicas && f.Status.AvailableReplicas == want.replicas {
			p.converged++
		}
	}
	return p, nil
}

// relParallel runs fn(0) .. fn(n-1) on workers goroutines and returns the
// first error.
func relParallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
