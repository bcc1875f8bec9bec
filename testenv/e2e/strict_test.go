package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// strictSide is one API a strictScenario runs against: fake clientsets
// made strict, or clients of a real control plane.
type strictSide struct {
	kube kubernetes.Interface
	foos fooclientset.Interface
	ns   string
}

// strictTimeout bounds every wait of the scenario: the garbage collector
// of a real control plane acts asynchronously.
const strictTimeout = 60 * time.Second

// TestStrictMatchesAPIServer runs one scenario against fake clientsets made
// strict by reconciletest.Strict and against a real control plane (with
// kube-controller-manager's garbage collector, and no deployment
// controller, so that nothing but the scenario and the garbage collector
// writes), and requires that a controller observes the same on both: uids,
// generations and whether updates need a resourceVersion (for a custom
// resource, Deployments, Leases, PodDisruptionBudgets and ConfigMaps), what
// Update and UpdateStatus keep, finalizers and deletionTimestamp, the
// errors, garbage collection of dependents, and the watch events of every
// object.
func TestStrictMatchesAPIServer(t *testing.T) {
	t.Parallel()
	root, err := repo.Root()
	require.NoError(t, err)
	cp := controlplane.StartT(t, controlplane.Options{
		Size: controlplane.Full,
		CRDs: []string{filepath.Join(root, "foo", "crd")},
		// The garbage collector, and what a Full control plane needs to
		// be ready; no workload controller changes the Deployments.
		Controllers: []string{"garbage-collector-controller", "serviceaccount-controller", "serviceaccount-token-controller"},
	})
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	foos, err := fooclientset.NewForConfig(cp.Config())
	require.NoError(t, err)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "strict-"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	onServer := strictScenario(ctx, t, strictSide{kube: kube, foos: foos, ns: ns.Name})

	fakeKube, fakeFoos := kubefake.NewClientset(), foofake.NewClientset()
	reconciletest.Strict(fakeKube, fakeFoos)
	onFake := strictScenario(ctx, t, strictSide{kube: fakeKube, foos: fakeFoos, ns: ns.Name})

	assert.Equal(t, onServer, onFake, "what a controller observes: the real API server, then the strict fake")
	if t.Failed() {
		t.Logf("real API server:\n%s", strings.Join(onServer, "\n"))
	}
}

// strictRecord collects the observations of a scenario, one line each.
type strictRecord struct {
	lines []string
}

func (r *strictRecord) add(step, format string, args ...any) {
	r.lines = append(r.lines, step+": "+fmt.Sprintf(format, args...))
}

// strictErr describes err as a controller sees it: its reason, and the
// fields and types of its causes. Each cause counts once: for a custom
// resource the API server lists some of them twice.
func strictErr(err error) string {
	if err == nil {
		return "ok"
	}
	s := string(apierrors.ReasonForError(err))
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		var causes []string
		for _, c := range status.Status().Details.Causes {
			causes = append(causes, fmt.Sprintf(" %s:%s", c.Field, c.Type))
		}
		slices.Sort(causes)
		s += strings.Join(slices.Compact(causes), "")
	}
	if s == "" {
		s = "error " + err.Error()
	}
	return s
}

// strictMeta describes the metadata a controller acts on.
func strictMeta(m metav1.Object) string {
	var owners []string
	for _, r := range m.GetOwnerReferences() {
		owners = append(owners, r.Name)
	}
	return fmt.Sprintf("generation=%d deleting=%t grace=%v finalizers=%v owners=%v labels=%v annotations=%v",
		m.GetGeneration(), m.GetDeletionTimestamp() != nil, ptr.Deref(m.GetDeletionGracePeriodSeconds(), -1),
		m.GetFinalizers(), owners, m.GetLabels(), m.GetAnnotations())
}

func strictFoo(name string) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
	}
}

func strictDeployment(name string, owners ...metav1.Object) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
		},
	}
	for _, o := range owners {
		d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{
			APIVersion: samplev1alpha1.SchemeGroupVersion.String(), Kind: "Foo",
			Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: ptr.To(true),
		})
	}
	return d
}

func strictLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)},
	}
}

func strictPodDisruptionBudget(name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}

// strictWatch records the watch events of one resource, by object name.
type strictWatch struct {
	w      watch.Interface
	done   chan struct{}
	mu     sync.Mutex
	events map[string][]string
	last   map[string]watch.Event
}

func newStrictWatch(t *testing.T, w watch.Interface, err error) *strictWatch {
	t.Helper()
	require.NoError(t, err)
	sw := &strictWatch{w: w, done: make(chan struct{}), events: map[string][]string{}, last: map[string]watch.Event{}}
	go func() {
		defer close(sw.done)
		for ev := range w.ResultChan() {
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			sw.mu.Lock()
			sw.events[m.GetName()] = append(sw.events[m.GetName()], string(ev.Type)+" "+strictMeta(m))
			sw.last[m.GetName()] = ev
			sw.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-sw.done
	})
	return sw
}

// settled tells whether the last event of name shows get's answer: the
// object gone, or its current resourceVersion.
func (sw *strictWatch) settled(name string, get func() (runtime.Object, error)) (bool, error) {
	obj, err := get()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	last, ok := sw.last[name]
	switch {
	case apierrors.IsNotFound(err):
		return ok && last.Type == watch.Deleted, nil
	case err != nil:
		return false, err
	case !ok:
		return false, nil
	}
	want, _ := meta.Accessor(obj)
	got, _ := meta.Accessor(last.Object)
	return last.Type != watch.Deleted && got.GetResourceVersion() == want.GetResourceVersion(), nil
}

func (sw *strictWatch) of(name string) []string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return slices.Clone(sw.events[name])
}

// strictScenario runs the steps against one side and returns what a
// controller observes. It uses the same code, polls included, for both.
func strictScenario(ctx context.Context, t *testing.T, s strictSide) []string {
	t.Helper()
	rec := &strictRecord{}
	foos := s.foos.SamplecontrollerV1alpha1().Foos(s.ns)
	deployments := s.kube.AppsV1().Deployments(s.ns)
	w, err := foos.Watch(ctx, metav1.ListOptions{})
	fooEvents := newStrictWatch(t, w, err)
	w, err = deployments.Watch(ctx, metav1.ListOptions{})
	deploymentEvents := newStrictWatch(t, w, err)
	leases := s.kube.CoordinationV1().Leases(s.ns)
	w, err = leases.Watch(ctx, metav1.ListOptions{})
	leaseEvents := newStrictWatch(t, w, err)
	eventually := func(step string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, strictTimeout, true, cond)
		require.NoError(t, err, step)
	}
	getFoo := func(name string) *samplev1alpha1.Foo {
		t.Helper()
		f, err := foos.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return f
	}
	getDeployment := func(name string) *appsv1.Deployment {
		t.Helper()
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return d
	}
	fooGone := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := foos.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), client(err)
		}
	}
	deploymentGone := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := deployments.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), client(err)
		}
	}
	fooState := func(f *samplev1alpha1.Foo) string {
		return fmt.Sprintf("%s spec.replicas=%d status.availableReplicas=%d", strictMeta(f), ptr.Deref(f.Spec.Replicas, -1), f.Status.AvailableReplicas)
	}
	deploymentState := func(d *appsv1.Deployment) string {
		return fmt.Sprintf("%s spec.replicas=%d status.replicas=%d", strictMeta(d), ptr.Deref(d.Spec.Replicas, -1), d.Status.Replicas)
	}

	// A Foo: uid, creationTimestamp, generation and the status subresource.
	a := strictFoo("a")
	a.UID = "chosen-by-the-client"
	a.Generation = 5
	a.Status.AvailableReplicas = 3
	created, err := foos.Create(ctx, a, metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create Foo", "uid set=%t uid from request=%t creationTimestamp set=%t %s", created.UID != "", created.UID == a.UID, !created.CreationTimestamp.IsZero(), fooState(created))

	f := created.DeepCopy()
	f.Spec.Replicas = ptr.To[int32](2)
	f.Status.AvailableReplicas = 4
	f.CreationTimestamp = metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	f.UID = ""
	f, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo spec and status", "%s %s same uid=%t same creationTimestamp=%t", strictErr(err), fooState(getFoo("a")), f.UID == created.UID, f.CreationTimestamp.Equal(&created.CreationTimestamp))
	require.NoError(t, err)

	f.Labels["tier"] = "front"
	f.Generation = 9
	f, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo labels and generation", "%s %s", strictErr(err), fooState(getFoo("a")))
	require.NoError(t, err)

	f.Annotations = map[string]string{"note": "x"}
	f, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo annotations", "%s %s", strictErr(err), fooState(getFoo("a")))
	require.NoError(t, err)

	before := f.ResourceVersion
	f, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo unchanged", "%s resourceVersion changed=%t", strictErr(err), f.ResourceVersion != before)
	require.NoError(t, err)

	g := f.DeepCopy()
	g.Status.AvailableReplicas = 1
	g.Spec.Replicas = ptr.To[int32](9)
	g.Labels["status"] = "writer"
	g.Annotations["status"] = "writer"
	g.Finalizers = []string{"example.com/status"}
	_, err = foos.UpdateStatus(ctx, g, metav1.UpdateOptions{})
	rec.add("UpdateStatus Foo with spec and metadata", "%s %s", strictErr(err), fooState(getFoo("a")))

	_, err = foos.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}},"spec":{"replicas":7},"status":{"availableReplicas":2}}`), metav1.PatchOptions{}, "status")
	rec.add("Patch Foo status subresource", "%s %s", strictErr(err), fooState(getFoo("a")))

	_, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo from a stale copy", "%s", strictErr(err))
	_, err = foos.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/resourceVersion","value":"`+f.ResourceVersion+`"},{"op":"replace","path":"/spec/replicas","value":5}]`), metav1.PatchOptions{})
	rec.add("Patch Foo with a test that fails", "%s", strictErr(err))
	_, err = foos.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/3"}]`), metav1.PatchOptions{})
	rec.add("Patch Foo with a path that does not exist", "%s", strictErr(err))
	_, err = foos.Patch(ctx, "a", types.JSONPatchType, []byte(`{"op":"remove"}`), metav1.PatchOptions{})
	rec.add("Patch Foo with a JSON patch that is no list", "%s", strictErr(err))

	f = getFoo("a")
	stranger := f.DeepCopy()
	stranger.UID = "another-uid"
	_, err = foos.Update(ctx, stranger, metav1.UpdateOptions{})
	rec.add("Update Foo with another uid", "%s", strictErr(err))
	_, err = foos.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"uid":"another-uid"}}`), metav1.PatchOptions{})
	rec.add("Patch Foo uid", "%s", strictErr(err))

	unversioned := f.DeepCopy()
	unversioned.ResourceVersion = ""
	unversioned.Labels["unversioned"] = "yes"
	_, err = foos.Update(ctx, unversioned, metav1.UpdateOptions{})
	rec.add("Update Foo without resourceVersion", "%s", strictErr(err))
	_, err = foos.UpdateStatus(ctx, unversioned, metav1.UpdateOptions{})
	rec.add("UpdateStatus Foo without resourceVersion", "%s", strictErr(err))
	f = getFoo("a")

	generated := strictFoo("")
	generated.GenerateName = "gen-"
	generated.Spec.DeploymentName = "gen"
	generated, err = foos.Create(ctx, generated, metav1.CreateOptions{})
	rec.add("create Foo with generateName", "%s prefix=%t length=%d", strictErr(err), strings.HasPrefix(generated.Name, "gen-"), len(generated.Name))

	early := f.DeepCopy()
	early.DeletionTimestamp = ptr.To(metav1.Now())
	_, err = foos.Update(ctx, early, metav1.UpdateOptions{})
	rec.add("Update Foo setting deletionTimestamp", "%s", strictErr(err))

	// Finalizers and deletionTimestamp.
	f.Finalizers = []string{"example.com/hold"}
	f, err = foos.Update(ctx, f, metav1.UpdateOptions{})
	rec.add("Update Foo adding a finalizer", "%s %s", strictErr(err), fooState(getFoo("a")))
	require.NoError(t, err)

	err = foos.Delete(ctx, "a", metav1.DeleteOptions{})
	marked := getFoo("a")
	rec.add("Delete Foo with a finalizer", "%s resourceVersion changed=%t %s", strictErr(err), marked.ResourceVersion != f.ResourceVersion, fooState(marked))

	err = foos.Delete(ctx, "a", metav1.DeleteOptions{})
	again := getFoo("a")
	rec.add("Delete Foo again", "%s resourceVersion changed=%t deletionTimestamp same=%t", strictErr(err), again.ResourceVersion != marked.ResourceVersion, again.DeletionTimestamp.Equal(marked.DeletionTimestamp))

	more := again.DeepCopy()
	more.Finalizers = append(more.Finalizers, "example.com/late")
	_, err = foos.Update(ctx, more, metav1.UpdateOptions{})
	rec.add("Update Foo adding a finalizer while deleting", "%s", strictErr(err))
	_, err = foos.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/late"}]`), metav1.PatchOptions{})
	rec.add("Patch Foo adding a finalizer while deleting", "%s", strictErr(err))

	undelete := again.DeepCopy()
	undelete.DeletionTimestamp = nil
	undelete.DeletionGracePeriodSeconds = nil
	undelete.Labels["undeleted"] = "tried"
	_, err = foos.Update(ctx, undelete, metav1.UpdateOptions{})
	rec.add("Update Foo clearing deletionTimestamp", "%s %s", strictErr(err), fooState(getFoo("a")))

	current := getFoo("a")
	err = foos.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("another-uid")}})
	rec.add("Delete Foo with another uid", "%s", strictErr(err))
	err = foos.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(marked.ResourceVersion)}})
	rec.add("Delete Foo with a stale resourceVersion", "%s", strictErr(err))

	current.Finalizers = nil
	last, err := foos.Update(ctx, current, metav1.UpdateOptions{})
	require.NoError(t, err)
	rec.add("Update Foo removing the last finalizer", "%s returned name=%s deleting=%t", strictErr(err), last.Name, last.DeletionTimestamp != nil)
	_, err = foos.Get(ctx, "a", metav1.GetOptions{})
	rec.add("Get Foo after its last finalizer", "%s", strictErr(err))

	// A Deployment: generation and the status subresource of a built-in
	// kind.
	web := strictDeployment("web")
	web.Status.Replicas = 2
	d, err := deployments.Create(ctx, web, metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create Deployment", "uid set=%t %s", d.UID != "", deploymentState(d))

	d.Spec.Replicas = ptr.To[int32](2)
	d, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	rec.add("Update Deployment spec", "%s %s", strictErr(err), deploymentState(getDeployment("web")))
	require.NoError(t, err)
	d.Labels["tier"] = "front"
	d, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	rec.add("Update Deployment labels", "%s %s", strictErr(err), deploymentState(getDeployment("web")))
	require.NoError(t, err)
	d.Annotations = map[string]string{"note": "x"}
	d, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	rec.add("Update Deployment annotations", "%s %s", strictErr(err), deploymentState(getDeployment("web")))
	require.NoError(t, err)

	ds := d.DeepCopy()
	ds.Status.Replicas = 1
	ds.Spec.Replicas = ptr.To[int32](5)
	ds.Labels["status"] = "writer"
	ds.Annotations["status"] = "writer"
	ds.Finalizers = []string{"example.com/status"}
	_, err = deployments.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
	rec.add("UpdateStatus Deployment with spec and metadata", "%s %s", strictErr(err), deploymentState(getDeployment("web")))

	d = getDeployment("web")
	onlyStatus := d.DeepCopy()
	onlyStatus.Status.Replicas = 7
	onlyStatus, err = deployments.Update(ctx, onlyStatus, metav1.UpdateOptions{})
	rec.add("Update Deployment status only", "%s resourceVersion changed=%t %s", strictErr(err), onlyStatus.ResourceVersion != d.ResourceVersion, deploymentState(getDeployment("web")))

	_, err = deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4},"status":{"replicas":2}}`), metav1.PatchOptions{}, "status")
	rec.add("Patch Deployment status subresource", "%s %s", strictErr(err), deploymentState(getDeployment("web")))

	d = getDeployment("web")
	d.ResourceVersion = ""
	d.Spec.Replicas = ptr.To[int32](3)
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	rec.add("Update Deployment without resourceVersion", "%s %s", strictErr(err), deploymentState(getDeployment("web")))

	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	d = getDeployment("web")
	d.Finalizers = nil
	d.Status.Replicas = 3
	_, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	rec.add("UpdateStatus Deployment removing its last finalizer", "%s", strictErr(err))
	_, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	rec.add("Get Deployment after its last finalizer", "%s", strictErr(err))

	// A Lease: its API server strategy refuses updates without a
	// resourceVersion and keeps no generation.
	leaseState := func(l *coordinationv1.Lease) string {
		return fmt.Sprintf("%s spec.holderIdentity=%s", strictMeta(l), ptr.Deref(l.Spec.HolderIdentity, ""))
	}
	getLease := func(name string) *coordinationv1.Lease {
		t.Helper()
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return l
	}
	l, err := leases.Create(ctx, strictLease("lock"), metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create Lease", "uid set=%t %s", l.UID != "", leaseState(l))

	l.Spec.HolderIdentity = ptr.To("b")
	l.Generation = 7
	l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	rec.add("Update Lease spec and generation", "%s %s", strictErr(err), leaseState(getLease("lock")))
	require.NoError(t, err)

	stale := l.DeepCopy()
	unversionedLease := l.DeepCopy()
	unversionedLease.ResourceVersion = ""
	unversionedLease.Spec.HolderIdentity = ptr.To("c")
	_, err = leases.Update(ctx, unversionedLease, metav1.UpdateOptions{})
	rec.add("Update Lease without resourceVersion", "%s %s", strictErr(err), leaseState(getLease("lock")))
	unversionedLease.UID = "another-uid"
	_, err = leases.Update(ctx, unversionedLease, metav1.UpdateOptions{})
	rec.add("Update Lease with another uid and without resourceVersion", "%s", strictErr(err))

	l, err = leases.Patch(ctx, "lock", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"d"}}`), metav1.PatchOptions{})
	rec.add("Patch Lease spec", "%s %s", strictErr(err), leaseState(getLease("lock")))
	require.NoError(t, err)
	stale.Spec.HolderIdentity = ptr.To("e")
	_, err = leases.Update(ctx, stale, metav1.UpdateOptions{})
	rec.add("Update Lease from a stale copy", "%s", strictErr(err))

	l.Finalizers = []string{"example.com/hold"}
	l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, leases.Delete(ctx, "lock", metav1.DeleteOptions{}))
	rec.add("Delete Lease with a finalizer", "%s", leaseState(getLease("lock")))
	_, err = leases.Patch(ctx, "lock", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	carried := strictLease("carried")
	carried.Generation = 3
	carried.Finalizers = []string{"example.com/hold"}
	carried, err = leases.Create(ctx, carried, metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create Lease carrying a generation", "%s", leaseState(carried))
	require.NoError(t, leases.Delete(ctx, "carried", metav1.DeleteOptions{}))
	rec.add("Delete Lease carrying a generation", "%s", leaseState(getLease("carried")))
	_, err = leases.Patch(ctx, "carried", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// A PodDisruptionBudget keeps a generation and refuses updates without
	// a resourceVersion; a ConfigMap keeps none and allows them.
	pdbs := s.kube.PolicyV1().PodDisruptionBudgets(s.ns)
	pdb, err := pdbs.Create(ctx, strictPodDisruptionBudget("budget"), metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create PodDisruptionBudget", "%s", strictMeta(pdb))
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	pdb, err = pdbs.Update(ctx, pdb, metav1.UpdateOptions{})
	rec.add("Update PodDisruptionBudget spec", "%s %s", strictErr(err), strictMeta(pdb))
	require.NoError(t, err)
	pdb.ResourceVersion = ""
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(3))
	_, err = pdbs.Update(ctx, pdb, metav1.UpdateOptions{})
	rec.add("Update PodDisruptionBudget without resourceVersion", "%s", strictErr(err))
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
	pdb.Status.DisruptionsAllowed = 1
	_, err = pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	rec.add("UpdateStatus PodDisruptionBudget without resourceVersion", "%s", strictErr(err))

	configMaps := s.kube.CoreV1().ConfigMaps(s.ns)
	cm, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rec.add("create ConfigMap", "%s", strictMeta(cm))
	cm.ResourceVersion = ""
	cm.Data["k"] = "2"
	cm, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	rec.add("Update ConfigMap without resourceVersion", "%s %s data=%v", strictErr(err), strictMeta(cm), cm.Data)
	require.NoError(t, err)

	// Garbage collection of dependents, across the two clientsets.
	owner, err := foos.Create(ctx, strictFoo("owner"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = deployments.Create(ctx, strictDeployment("child", owner), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, foos.Delete(ctx, "owner", metav1.DeleteOptions{}))
	eventually("the dependent goes", deploymentGone("child"))
	rec.add("Delete an owner", "dependent gone")

	o1, err := foos.Create(ctx, strictFoo("o1"), metav1.CreateOptions{})
	require.NoError(t, err)
	o2, err := foos.Create(ctx, strictFoo("o2"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = deployments.Create(ctx, strictDeployment("shared", o1, o2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, foos.Delete(ctx, "o1", metav1.DeleteOptions{}))
	eventually("the reference goes", func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, "shared", metav1.GetOptions{})
		return err == nil && len(d.OwnerReferences) == 1, client(err)
	})
	rec.add("Delete one of two owners", "%s", deploymentState(getDeployment("shared")))

	o3, err := foos.Create(ctx, strictFoo("o3"), metav1.CreateOptions{})
	require.NoError(t, err)
	held := strictDeployment("held", o3)
	held.Finalizers = []string{"example.com/hold"}
	_, err = deployments.Create(ctx, held, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, foos.Delete(ctx, "o3", metav1.DeleteOptions{}))
	eventually("the dependent is marked", func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp != nil, client(err)
	})
	rec.add("Delete the owner of a dependent with a finalizer", "%s", deploymentState(getDeployment("held")))
	_, err = deployments.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually("the dependent goes", deploymentGone("held"))
	rec.add("Remove the dependent's finalizer", "dependent gone")

	o4, err := foos.Create(ctx, strictFoo("o4"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = deployments.Create(ctx, strictDeployment("orphaned", o4), metav1.CreateOptions{})
	require.NoError(t, err)
	// The garbage collector orphans only the dependents its informers have
	// seen; one it sees after the owner went has a dangling owner and is
	// deleted. So a second owner and dependent, created after these, go
	// first: once the garbage collector has deleted that dependent, its
	// informers are past "orphaned" and o4 (the fake collects at once).
	w4, err := foos.Create(ctx, strictFoo("w4"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = deployments.Create(ctx, strictDeployment("witness", w4), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, foos.Delete(ctx, "w4", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	eventually("the witness goes", deploymentGone("witness"))
	require.NoError(t, foos.Delete(ctx, "o4", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}))
	eventually("the owner goes", fooGone("o4"))
	rec.add("Delete an owner with Orphan", "%s", deploymentState(getDeployment("orphaned")))

	o5, err := foos.Create(ctx, strictFoo("o5"), metav1.CreateOptions{})
	require.NoError(t, err)
	blocker := strictDeployment("blocker", o5)
	blocker.Finalizers = []string{"example.com/hold"}
	_, err = deployments.Create(ctx, blocker, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, foos.Delete(ctx, "o5", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	eventually("the blocking dependent is marked", func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, "blocker", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp != nil, client(err)
	})
	rec.add("Delete an owner with Foreground", "owner %s; dependent %s", fooState(getFoo("o5")), deploymentState(getDeployment("blocker")))
	_, err = deployments.Patch(ctx, "blocker", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually("the owner goes", fooGone("o5"))
	rec.add("Remove the blocking dependent's finalizer", "owner gone")

	// The watch events of every object, once each shows its last state.
	for _, name := range []string{"a", "owner", "o1", "o2", "o3", "o4", "o5"} {
		eventually("watch of Foo "+name, func(ctx context.Context) (bool, error) {
			return fooEvents.settled(name, func() (runtime.Object, error) { return foos.Get(ctx, name, metav1.GetOptions{}) })
		})
		for _, ev := range fooEvents.of(name) {
			rec.add("event Foo "+name, "%s", ev)
		}
	}
	for _, name := range []string{"lock", "carried"} {
		eventually("watch of Lease "+name, func(ctx context.Context) (bool, error) {
			return leaseEvents.settled(name, func() (runtime.Object, error) { return leases.Get(ctx, name, metav1.GetOptions{}) })
		})
		for _, ev := range leaseEvents.of(name) {
			rec.add("event Lease "+name, "%s", ev)
		}
	}
	for _, name := range []string{"web", "child", "shared", "held", "orphaned", "blocker"} {
		eventually("watch of Deployment "+name, func(ctx context.Context) (bool, error) {
			return deploymentEvents.settled(name, func() (runtime.Object, error) { return deployments.Get(ctx, name, metav1.GetOptions{}) })
		})
		for _, ev := range deploymentEvents.of(name) {
			rec.add("event Deployment "+name, "%s", ev)
		}
	}
	return rec.lines
}

// client returns err unless it is a NotFound, which a poll waits out.
func client(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
