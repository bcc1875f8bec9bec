package e2e

// Helpers of BenchmarkConvergence (convergence_bench_test.go): the
// controller binary built for speed, processes owned by a benchmark, a
// watch that notices when every Foo has converged, and counting requests in
// the part of the audit log an iteration wrote.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// terminate sends SIGTERM and waits up to timeout for a clean exit.
func terminate(tb testing.TB, p *process, timeout time.Duration) {
	tb.Helper()
	require.NoError(tb, p.cmd.Process.Signal(syscall.SIGTERM))
	code, exited := p.wait(timeout)
	require.True(tb, exited, "%s exits within %s of SIGTERM", p.name, timeout)
	require.Equal(tb, 0, code, "exit code of %s; output:\n%s", p.name, p.out.String())
}

// unlimited returns a copy of cfg without a client-side rate limit.
func unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// grantControllerRole creates the ClusterRole of examples/foo/deploy/role.yaml
// and binds it to a user, then waits until the user may list Deployments.
func grantControllerRole(ctx context.Context, tb testing.TB, admin kubernetes.Interface, root, user string, asUser *rest.Config) {
	tb.Helper()
	objs, err := controlplane.ReadObjects(filepath.Join(root, "examples", "foo", "deploy", "role.yaml"))
	require.NoError(tb, err)
	var role *rbacv1.ClusterRole
	for _, obj := range objs {
		if r, ok := obj.(*rbacv1.ClusterRole); ok {
			role = r
		}
	}
	require.NotNil(tb, role, "role.yaml has a ClusterRole")
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) { // granted to another user before
		require.NoError(tb, err)
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(tb, err)
	cs, err := kubernetes.NewForConfig(asUser)
	require.NoError(tb, err)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	require.NoError(tb, err, "the ClusterRole binding for %s takes effect", user)
}

// writeUserKubeconfig writes a kubeconfig for cfg (a user's config) into dir.
func writeUserKubeconfig(tb testing.TB, cfg *rest.Config, user, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "kubeconfig-"+user)
	require.NoError(tb, controlplane.WriteKubeconfig(path, cfg, user))
	return path
}

// controllerState is what the controller's /metrics page says about its
// work.
type controllerState struct {
	reconciles, depth, active float64
}

func readControllerState(ctx context.Context, p *process) (controllerState, error) {
	code, body, err := httpGet(ctx, p.metricsURL+"/metrics")
	if err != nil {
		return controllerState{}, err
	}
	if code != 200 {
		return controllerState{}, fmt.Errorf("/metrics: HTTP %d", code)
	}
	controller := p.controller
	if controller == "" {
		controller = foo.ControllerName
	}
	labels := map[string]string{"controller": controller}
	var s controllerState
	var found [3]bool
	s.reconciles, found[0] = metricSum(body, "controller_runtime_reconcile_total", labels)
	s.depth, found[1] = metricSum(body, "workqueue_depth", labels)
	s.active, found[2] = metricSum(body, "controller_runtime_active_workers", labels)
	if !found[1] || !found[2] {
		return s, errors.New("/metrics has no workqueue_depth or controller_runtime_active_workers")
	}
	return s, nil
}

// waitControllerReady waits until the controller's /readyz answers 200.
func waitControllerReady(ctx context.Context, tb testing.TB, p *process) {
	tb.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		code, _, err := httpGet(ctx, p.healthURL+"/readyz")
		return err == nil && code == 200, nil
	})
	require.NoError(tb, err, "%s becomes ready; output:\n%s", p.name, p.out.String())
}

// waitControllerSettled waits until the controller has run at least
// minReconciles reconciles, has an empty queue and no reconcile in
// progress, and its reconcile count stayed the same for a second.
func waitControllerSettled(ctx context.Context, tb testing.TB, p *process, minReconciles float64, timeout time.Duration) controllerState {
	tb.Helper()
	var last controllerState
	var quietSince time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		s, err := readControllerState(ctx, p)
		if err != nil {
			return false, nil
		}
		idle := s.reconciles >= minReconciles && s.depth == 0 && s.active == 0
		switch {
		case !idle || s.reconciles != last.reconciles:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		}
		last = s
		return !quietSince.IsZero() && time.Since(quietSince) >= time.Second, nil
	})
	require.NoError(tb, err, "%s settles (last state %+v, want at least %.0f reconciles)", p.name, last, minReconciles)
	return last
}

// auditSize is the current size of the audit log: later reads start there.
func auditSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	require.NoError(tb, err)
	return fi.Size()
}

// auditFrom parses the audit log from offset on. A line torn at offset is
// skipped by the parser.
func auditFrom(tb testing.TB, path string, offset int64) []audit.Event {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	_, err = f.Seek(offset, io.SeekStart)
	require.NoError(tb, err)
	events, err := audit.Parse(f)
	require.NoError(tb, err)
	return audit.Select(events, audit.Completed())
}

// before selects requests received before t.
func before(t time.Time) audit.Filter { return func(e audit.Event) bool { return e.Time.Before(t) } }

// writeCounts splits the write requests of one client during one sync of
// many Foos.
type writeCounts struct {
	// deploymentCreates, statusUpdates and otherObjectWrites are requests
	// for Deployments and Foos; events are creates and patches of Events.
	deploymentCreates, statusUpdates, otherObjectWrites, events int
	// conflicts are writes answered 409 (resourceVersion conflicts and
	// creates of existing objects); other failures counts the rest of the
	// non-2xx answers.
	conflicts, otherFailures int
	// maxPerFoo is the most Foo and Deployment writes for any one Foo
	// (Deployments are named like their Foo).
	maxPerFoo int
}

func countWrites(writes []audit.Event) writeCounts {
	var c writeCounts
	perFoo := map[string]int{}
	for _, e := range writes {
		isFoo := e.APIGroup == samplev1alpha1.GroupName && e.Resource == "foos"
		isDeployment := e.APIGroup == "apps" && e.Resource == "deployments"
		switch {
		case isDeployment && e.Verb == "create":
			c.deploymentCreates++
		case isFoo && e.Subresource == "status" && e.Verb == "update":
			c.statusUpdates++
		case isFoo || isDeployment:
			c.otherObjectWrites++
		case e.APIGroup == "" && e.Resource == "events", e.APIGroup == "events.k8s.io" && e.Resource == "events":
			c.events++
		}
		if isFoo || isDeployment {
			perFoo[e.Namespace+"/"+e.Name]++
		}
		switch {
		case e.Code == 409:
			c.conflicts++
		case e.Code < 200 || e.Code > 299:
			c.otherFailures++
		}
	}
	for _, n := range perFoo {
		c.maxPerFoo = max(c.maxPerFoo, n)
	}
	return c
}

// timeline summarises write requests by user, verb and resource in one
// line: how many, and when the first and the last were received, in seconds
// after start. Users are shortened to their last name segment.
func timeline(writes []audit.Event, start time.Time) string {
	type span struct {
		n           int
		first, last time.Duration
	}
	spans := map[string]*span{}
	for _, e := range writes {
		user := e.User[strings.LastIndexByte(e.User, ':')+1:]
		res := e.Resource
		if e.Subresource != "" {
			res += "/" + e.Subresource
		}
		key := user + " " + e.Verb + " " + res
		at := e.Time.Sub(start)
		s, ok := spans[key]
		if !ok {
			s = &span{first: at, last: at}
			spans[key] = s
		}
		s.n++
		s.first, s.last = min(s.first, at), max(s.last, at)
	}
	keys := slices.Collect(maps.Keys(spans))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(spans[a].first, spans[b].first) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		s := spans[k]
		parts = append(parts, fmt.Sprintf("%s %d %.1f-%.1fs", k, s.n, s.first.Seconds(), s.last.Seconds()))
	}
	return strings.Join(parts, "; ")
}

func (c writeCounts) objectWrites() int {
	return c.deploymentCreates + c.statusUpdates + c.otherObjectWrites
}

// convergenceWatch follows the Foos and Deployments of one namespace and
// records when every one of want Foos has converged: its Deployment exists
// and is controlled by it, the Deployment's availableReplicas equals
// spec.replicas, and the Foo's status mirrors that (availableReplicas,
// observedGeneration, Ready=True).
type convergenceWatch struct {
	namespace   string
	want        int
	foos        foolisters.FooLister
	deployments appslisters.DeploymentLister
	// onAvailable, if set, sees every added or updated Deployment whose
	// availableReplicas reached its replicas.
	onAvailable func(*appsv1.Deployment)

	mu          sync.Mutex
	converged   map[string]bool
	convergedAt time.Time
	all         chan struct{}

	cancel    context.CancelFunc
	factories []interface{ Shutdown() }
}

// watchConvergence starts the informers and waits for their caches.
// Stop it with stop (tb's cleanup does too).
func watchConvergence(ctx context.Context, tb testing.TB, cfg *rest.Config, namespace string, want int, onAvailable func(*appsv1.Deployment)) *convergenceWatch {
	tb.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(tb, err)
	foos, err := fooclientset.NewForConfig(cfg)
	require.NoError(tb, err)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace))
	fooFactory := fooinformers.NewSharedInformerFactoryWithOptions(foos, 0, fooinformers.WithNamespace(namespace))
	deployInf := kubeFactory.Apps().V1().Deployments()
	fooInf := fooFactory.Samplecontroller().V1alpha1().Foos()
	w := &convergenceWatch{
		namespace:   namespace,
		want:        want,
		foos:        fooInf.Lister(),
		deployments: deployInf.Lister(),
		onAvailable: onAvailable,
		converged:   map[string]bool{},
		all:         make(chan struct{}),
		factories:   []interface{ Shutdown() }{kubeFactory, fooFactory},
	}
	_, err = fooInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.fooChanged(obj) },
		UpdateFunc: func(_, obj any) { w.fooChanged(obj) },
	})
	require.NoError(tb, err)
	_, err = deployInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.deploymentChanged(obj) },
		UpdateFunc: func(_, obj any) { w.deploymentChanged(obj) },
	})
	require.NoError(tb, err)
	ctx, w.cancel = context.WithCancel(ctx)
	kubeFactory.Start(ctx.Done())
	fooFactory.Start(ctx.Done())
	tb.Cleanup(w.stop)
	for typ, ok := range kubeFactory.WaitForCacheSync(ctx.Done()) {
		require.True(tb, ok, "cache of %v synced", typ)
	}
	for typ, ok := range fooFactory.WaitForCacheSync(ctx.Done()) {
		require.True(tb, ok, "cache of %v synced", typ)
	}
	return w
}

// stop stops the informers and waits for their goroutines; it is
// idempotent.
func (w *convergenceWatch) stop() {
	w.cancel()
	for _, f := range w.factories {
		f.Shutdown()
	}
}

func (w *convergenceWatch) fooChanged(obj any) {
	if f, ok := obj.(*samplev1alpha1.Foo); ok {
		w.check(f.Name)
	}
}

func (w *convergenceWatch) deploymentChanged(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	if w.onAvailable != nil && d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas {
		w.onAvailable(d)
	}
	if ref := metav1.GetControllerOfNoCopy(d); ref != nil && ref.Kind == "Foo" {
		w.check(ref.Name)
	}
}

// check re-evaluates one Foo. A Foo counts as converged from the first
// moment it is seen converged.
func (w *convergenceWatch) check(name string) {
	f, err := w.foos.Foos(w.namespace).Get(name)
	if err != nil {
		return
	}
	d, err := w.deployments.Deployments(w.namespace).Get(f.Spec.DeploymentName)
	if err != nil || !fooConverged(f, d) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.converged[name] {
		return
	}
	w.converged[name] = true
	if len(w.converged) == w.want {
		w.convergedAt = time.Now()
		close(w.all)
	}
}

func fooConverged(f *samplev1alpha1.Foo, d *appsv1.Deployment) bool {
	want := samplev1alpha1.DefaultReplicas
	if f.Spec.Replicas != nil {
		want = *f.Spec.Replicas
	}
	ref := metav1.GetControllerOfNoCopy(d)
	ready := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
	return ref != nil && ref.UID == f.UID &&
		d.Status.AvailableReplicas == want &&
		f.Status.AvailableReplicas == want &&
		f.Status.ObservedGeneration == f.Generation &&
		ready != nil && ready.Status == metav1.ConditionTrue
}

// progress reports how many Foos have converged.
func (w *convergenceWatch) progress() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.converged)
}

// wait waits until every Foo has converged and returns when that happened.
// It fails tb after timeout, or as soon as healthy (checked every 200ms)
// returns an error.
func (w *convergenceWatch) wait(tb testing.TB, timeout time.Duration, healthy func() error) time.Time {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.all:
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.convergedAt
		case <-deadline.C:
			tb.Fatalf("after %s only %d of %d Foos in %s converged; not yet: %s", timeout, w.progress(), w.want, w.namespace, w.sampleUnconverged(5))
		case <-tick.C:
			if err := healthy(); err != nil {
				tb.Fatalf("%v (%d of %d Foos had converged)", err, w.progress(), w.want)
			}
		}
	}
}

// running returns a health check for wait that fails once p exits.
func running(p *process) func() error {
	return func() error {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); output:\n%s", p.name, p.waitErr, p.out.String())
		}
		return nil
	}
}

// sampleUnconverged describes up to n Foos that have not converged.
func (w *convergenceWatch) sampleUnconverged(n int) string {
	foos, _ := w.foos.Foos(w.namespace).List(labels.Everything())
	slices.SortFunc(foos, func(a, b *samplev1alpha1.Foo) int { return strings.Compare(a.Name, b.Name) })
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, f := range foos {
		if w.converged[f.Name] || len(out) >= n {
			continue
		}
		desc := fmt.Sprintf("%s (status available %d, observedGeneration %d/%d", f.Name, f.Status.AvailableReplicas, f.Status.ObservedGeneration, f.Generation)
		if d, err := w.deployments.Deployments(w.namespace).Get(f.Spec.DeploymentName); err == nil {
			desc += fmt.Sprintf("; Deployment available %d, observedGeneration %d/%d)", d.Status.AvailableReplicas, d.Status.ObservedGeneration, d.Generation)
		} else {
			desc += "; no Deployment)"
		}
		out = append(out, desc)
	}
	if len(foos) < w.want {
		out = append(out, fmt.Sprintf("only %d Foos exist", len(foos)))
	}
	return strings.Join(out, ", ")
}

// createNamespace creates a namespace and deletes it when tb ends, waiting
// until it is gone so that the next iteration starts from the same state.
func createNamespace(ctx context.Context, tb testing.TB, kube kubernetes.Interface, name string, deleteTimeout time.Duration) {
	tb.Helper()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		// tb's context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		begin := time.Now()
		err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("deleting namespace %s: %v", name, err)
			return
		}
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			tb.Errorf("namespace %s is not gone %s after its deletion: %v", name, deleteTimeout, err)
			return
		}
		tb.Logf("namespace %s deleted in %s", name, time.Since(begin).Round(100*time.Millisecond))
	})
}

// runParallel calls fn(i) for i in [0, n) from workers goroutines and
// returns the first error.
func runParallel(n, workers int, fn func(i int) error) error {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// iterationTB is a testing.TB whose cleanups run when done is called, not
// when the benchmark ends, so that each iteration of a benchmark loop
// cleans up before the next one starts.
type iterationTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

// Cleanup registers f to run when done is called.
func (it *iterationTB) Cleanup(f func()) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.cleanups = append(it.cleanups, f)
}

// done runs the cleanups, last registered first.
func (it *iterationTB) done() {
	it.mu.Lock()
	fs := it.cleanups
	it.cleanups = nil
	it.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}
