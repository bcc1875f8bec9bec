package write_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// trimmer captures the transform informer.Trim sets, for a test that fills
// a cache by hand.
type trimmer struct{ fn cache.TransformFunc }

func (c *trimmer) SetTransform(fn cache.TransformFunc) error { c.fn = fn; return nil }

func trimmed[T runtime.Object](t *testing.T, c *trimmer, obj T) T {
	t.Helper()
	out, err := c.fn(obj)
	require.NoError(t, err)
	return out.(T)
}

// deploymentEnv is a strict fake clientset holding a Deployment with a
// sidecar and fields the cache does not keep, and a trimmed cache that the
// test fills by hand.
type deploymentEnv struct {
	kube    *fake.Clientset
	trim    trimmer
	cache   cache.Indexer
	objects *write.Objects[*appsv1.Deployment]
}

func newDeploymentEnv(t *testing.T) *deploymentEnv {
	t.Helper()
	return newDeploymentEnvKeeping(t)
}

// newDeploymentEnvKeeping is newDeploymentEnv with a cache that also keeps
// the fields paths names.
func newDeploymentEnvKeeping(t *testing.T, paths ...string) *deploymentEnv {
	t.Helper()
	e := &deploymentEnv{kube: fake.NewClientset()}
	reconciletest.Strict(e.kube)
	paths = append([]string{"spec.replicas", "spec.template.spec.containers.name", "spec.template.spec.containers.image"}, paths...)
	require.NoError(t, informer.Trim[*appsv1.Deployment](&e.trim, paths...))
	inf := informers.NewSharedInformerFactory(e.kube, 0).Apps().V1().Deployments().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	e.cache, e.objects = inf.GetIndexer(), write.New(inf)
	_, err := e.kube.AppsV1().Deployments("ns").Create(reconciletest.Context(t), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: map[string]string{"team": "a"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "nginx", Image: "nginx:1", Args: []string{"-v"}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
			{Name: "sidecar", Image: "proxy:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
		}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t)
	e.kube.ClearActions()
	return e
}

// deliver puts the server's object into the cache, trimmed, as the
// informer does with a watch event.
func (e *deploymentEnv) deliver(t *testing.T) {
	t.Helper()
	require.NoError(t, e.cache.Update(trimmed(t, &e.trim, e.server(t))))
}

func (e *deploymentEnv) server(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := e.kube.AppsV1().Deployments("ns").Get(reconciletest.Context(t), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return d
}

func (e *deploymentEnv) client() write.Client[*appsv1.Deployment] {
	return e.kube.AppsV1().Deployments("ns")
}

func webWant() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
}

// nginx sets the replicas and the image of the nginx container.
func nginx(replicas int32, image string) func(d *appsv1.Deployment) error {
	return func(d *appsv1.Deployment) error {
		d.Spec.Replicas = &replicas
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Name == "nginx" {
				d.Spec.Template.Spec.Containers[i].Image = image
			}
		}
		return nil
	}
}

// A change to a trimmed object is sent as a strategic merge patch of what
// changed, guarded by the cached resourceVersion: what the cache did not
// keep stays as the server has it, and the gate waits for the patch.
func TestEnsureTrimmedPatchesWhatChanged(t *testing.T) {
	e := newDeploymentEnv(t)
	ctx := reconciletest.Context(t)
	cachedVersion := e.server(t).ResourceVersion
	e.kube.ClearActions()

	got, change, err := e.objects.Ensure(ctx, e.client(), webWant(), nginx(3, "nginx:2"))
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.False(t, informer.Trimmed(got), "the answer is the server's whole object")

	require.Equal(t, []string{"patch apps/v1/deployments ns/web"}, reconciletest.Describe(e.kube.Actions()))
	patch := e.kube.Actions()[0].(k8stesting.PatchAction)
	assert.Equal(t, types.StrategicMergePatchType, patch.GetPatchType())
	var sent map[string]any
	require.NoError(t, json.Unmarshal(patch.GetPatch(), &sent))
	assert.Equal(t, map[string]any{"resourceVersion": cachedVersion}, sent["metadata"], "the patch carries the cached version and nothing else of the metadata")

	d := e.server(t)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	containers := d.Spec.Template.Spec.Containers
	require.Len(t, containers, 2)
	assert.Equal(t, "nginx:2", containers[0].Image)
	assert.Equal(t, []string{"-v"}, containers[0].Args, "fields the cache did not keep stay")
	assert.Equal(t, "1", containers[0].Resources.Limits.Cpu().String())
	assert.Equal(t, corev1.Container{Name: "sidecar", Image: "proxy:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}, containers[1])
	assert.Equal(t, map[string]string{"team": "a"}, d.Annotations, "the mark never reaches the server")

	// The gate works on trimmed objects: the cache is behind the patch
	// until it shows the patched version.
	_, _, err = e.objects.Get(cache.ObjectName{Namespace: "ns", Name: "web"})
	requireStale(t, err)
	e.deliver(t)
	cached, found, err := e.objects.Get(cache.ObjectName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, informer.Trimmed(cached))

	// Nothing to change: nothing is sent.
	e.kube.ClearActions()
	_, change, err = e.objects.Ensure(ctx, e.client(), webWant(), nginx(3, "nginx:2"))
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Empty(t, e.kube.Actions())

	// A container mutate adds by name is added beside the others.
	_, _, err = e.objects.Ensure(ctx, e.client(), webWant(), func(d *appsv1.Deployment) error {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "logs", Image: "logs:1"})
		return nil
	})
	require.NoError(t, err)
	var names []string
	for _, c := range e.server(t).Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"nginx", "sidecar", "logs"}, names)
	assert.Equal(t, []string{"-v"}, e.server(t).Spec.Template.Spec.Containers[0].Args)

	// What the cache did not keep cannot be cleared through the trimmed
	// copy: dropping its annotations (the mark alone) leaves the server's.
	e.deliver(t)
	_, _, err = e.objects.Ensure(ctx, e.client(), webWant(), func(d *appsv1.Deployment) error {
		d.Annotations = nil
		d.Spec.Replicas = ptr.To[int32](4)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int32(4), *e.server(t).Spec.Replicas)
	assert.Equal(t, map[string]string{"team": "a"}, e.server(t).Annotations)
}

// A patch built on a cached version the server has moved past meets a
// conflict, which is quiet while the cache has not seen the server's
// version, and goes through once it has.
func TestEnsureTrimmedConflict(t *testing.T) {
	e := newDeploymentEnv(t)
	ctx := reconciletest.Context(t)
	other := e.server(t)
	other.Spec.Template.Spec.Containers[1].Image = "proxy:2"
	_, err := e.kube.AppsV1().Deployments("ns").Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, _, err = e.objects.Ensure(ctx, e.client(), webWant(), nginx(1, "nginx:2"))
	requireStale(t, err)
	assert.True(t, apierrors.IsConflict(err))
	e.deliver(t)
	_, change, err := e.objects.Ensure(ctx, e.client(), webWant(), nginx(1, "nginx:2"))
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	containers := e.server(t).Spec.Template.Spec.Containers
	assert.Equal(t, []string{"nginx:2", "proxy:2"}, []string{containers[0].Image, containers[1].Image})
}

// A trimmed object never goes out whole: Strict refuses an update of one,
// and the write package refuses to update its status from it.
func TestTrimmedObjectsAreNeverSentWhole(t *testing.T) {
	e := newDeploymentEnv(t)
	ctx := reconciletest.Context(t)
	cached, found, err := e.objects.Get(cache.ObjectName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	require.True(t, found)

	_, err = e.kube.AppsV1().Deployments("ns").Update(ctx, cached.DeepCopy(), metav1.UpdateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err))
	assert.ErrorContains(t, err, "trimmed")
	assert.Equal(t, []string{"-v"}, e.server(t).Spec.Template.Spec.Containers[0].Args)

	_, _, err = e.objects.UpdateStatus(ctx, e.kube.AppsV1().Deployments("ns"), cached, func(d *appsv1.Deployment) error {
		d.Status.AvailableReplicas = 1
		return nil
	})
	require.ErrorIs(t, err, write.ErrTrimmed)
}

// A custom resource takes a JSON merge patch; a change to a list, which
// the patch would replace whole, is refused.
func TestEnsureTrimmedCustomResource(t *testing.T) {
	foos := foofake.NewClientset()
	reconciletest.Strict(foos)
	var trim trimmer
	require.NoError(t, informer.Trim[*samplev1alpha1.Foo](&trim, "spec.replicas", "status.conditions"))
	inf := fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	ctx := reconciletest.Context(t)
	client := foos.SamplecontrollerV1alpha1().Foos("ns")
	created, err := client.Create(ctx, &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f"},
		Spec: samplev1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr.To[int32](1)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(trimmed(t, &trim, created)))
	want := &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f"}}
	foos.ClearActions()

	_, change, err := objects.Ensure(ctx, client, want, func(f *samplev1alpha1.Foo) error {
		f.Spec.Replicas = ptr.To[int32](2)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	require.Len(t, foos.Actions(), 1)
	assert.Equal(t, types.MergePatchType, foos.Actions()[0].(k8stesting.PatchAction).GetPatchType())
	stored, err := client.Get(ctx, "f", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, samplev1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr.To[int32](2)}, stored.Spec, "the name the cache did not keep stays")

	require.NoError(t, inf.GetIndexer().Update(trimmed(t, &trim, stored)))
	_, _, err = objects.Ensure(ctx, client, want, func(f *samplev1alpha1.Foo) error {
		f.Status.Conditions = append(f.Status.Conditions, metav1.Condition{Type: "Ready"})
		return nil
	})
	require.ErrorIs(t, err, write.ErrTrimmed)
	assert.ErrorContains(t, err, "sets a list")

	// A status change is refused, status subresource or not.
	foos.ClearActions()
	_, _, err = objects.Ensure(ctx, client, want, func(f *samplev1alpha1.Foo) error {
		f.Status.AvailableReplicas = 2
		return nil
	})
	require.ErrorIs(t, err, write.ErrTrimmed)
	assert.ErrorContains(t, err, "mutate changed the status")
	assert.Empty(t, foos.Actions())
}

// Regression test: tolerations are an atomic list, which a strategic merge
// patch replaces whole. A cache that kept only the key and effect of each
// toleration would send an `Exists nvidia.com/gpu:NoSchedule` toleration
// back as `Equal nvidia.com/gpu="":NoSchedule` with any change to the
// list, so Trim refuses such a path before any object is cached: the
// informer keeps whole objects, and no patch is ever made from a trimmed
// copy of the list. Kept whole, the list is patched without loss.
func TestTrimmedAtomicList(t *testing.T) {
	gpu := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoExecute}
	addSpot := func(d *appsv1.Deployment) error {
		d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations, spot)
		return nil
	}
	tests := []struct {
		name    string
		paths   []string
		wantErr string // of Trim
		sent    string
	}{
		{name: "some fields of each toleration", paths: []string{"spec.replicas", "spec.template.spec.tolerations.key", "spec.template.spec.tolerations.effect"},
			wantErr: `"spec.template.spec.tolerations.key": spec.template.spec.tolerations is a list that a strategic merge patch replaces whole`,
			sent:    "update apps/v1/deployments ns/web"},
		{name: "the whole list", paths: []string{"spec.replicas", "spec.template.spec.tolerations"},
			sent: "patch apps/v1/deployments ns/web"},
		{name: "the whole list and some fields of it", paths: []string{"spec.template.spec.tolerations.key", "spec.template.spec.tolerations"},
			sent: "patch apps/v1/deployments ns/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := reconciletest.Context(t)
			kube := fake.NewClientset()
			reconciletest.Strict(kube)
			client := kube.AppsV1().Deployments("ns")
			_, err := client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "gpu", Image: "cuda:12"}}, Tolerations: []corev1.Toleration{gpu}}}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			factory := informers.NewSharedInformerFactory(kube, 0)
			deployments := factory.Apps().V1().Deployments()

			err = informer.Trim[*appsv1.Deployment](deployments.Informer(), tt.paths...)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.wantErr)
			}
			started, stop := context.WithCancel(ctx)
			t.Cleanup(func() { stop(); factory.Shutdown() })
			factory.Start(started.Done())
			require.True(t, cache.WaitForCacheSync(ctx.Done(), deployments.Informer().HasSynced))
			cached, err := deployments.Lister().Deployments("ns").Get("web")
			require.NoError(t, err)
			assert.Equal(t, tt.wantErr == "", informer.Trimmed(cached), "a refused Trim sets no transform")
			kube.ClearActions()

			_, change, err := write.New(deployments.TypedInformer()).Ensure(ctx, client, webWant(), addSpot)
			require.NoError(t, err)
			assert.Equal(t, write.Updated, change)
			assert.Equal(t, []string{tt.sent}, reconciletest.Describe(kube.Actions()))
			d, err := client.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, []corev1.Toleration{gpu, spot}, d.Spec.Template.Spec.Tolerations, "the server's toleration is kept as it was")
		})
	}
}

// Regression test: a status change made through Ensure or Update of a
// trimmed object fails with ErrTrimmed and sends nothing. A patch of the
// object does not write the status of a kind with a status subresource,
// and the trimmed copy cannot tell the server's status from its own, so
// the same patch would go out on every reconcile and change nothing.
func TestTrimmedStatusChangeThroughUpdate(t *testing.T) {
	available := func(d *appsv1.Deployment) error {
		d.Status.AvailableReplicas = 1
		return nil
	}
	tests := []struct {
		name  string
		write func(ctx context.Context, e *deploymentEnv, cached *appsv1.Deployment) (write.Change, error)
	}{
		{name: "Ensure", write: func(ctx context.Context, e *deploymentEnv, _ *appsv1.Deployment) (write.Change, error) {
			_, change, err := e.objects.Ensure(ctx, e.client(), webWant(), available)
			return change, err
		}},
		{name: "Update", write: func(ctx context.Context, e *deploymentEnv, cached *appsv1.Deployment) (write.Change, error) {
			_, change, err := e.objects.Update(ctx, e.client(), cached, available)
			return change, err
		}},
		{name: "Update of the status and the replicas", write: func(ctx context.Context, e *deploymentEnv, cached *appsv1.Deployment) (write.Change, error) {
			_, change, err := e.objects.Update(ctx, e.client(), cached, func(d *appsv1.Deployment) error {
				d.Spec.Replicas = ptr.To[int32](5)
				return available(d)
			})
			return change, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := reconciletest.Context(t)
			e := newDeploymentEnv(t)
			// The server's status has what the cache does not keep.
			withStatus := e.server(t)
			withStatus.Status = appsv1.DeploymentStatus{ObservedGeneration: withStatus.Generation, Replicas: 1, ReadyReplicas: 1}
			before, err := e.kube.AppsV1().Deployments("ns").UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
			require.NoError(t, err)
			e.deliver(t)
			cached, found, err := e.objects.Get(cache.ObjectName{Namespace: "ns", Name: "web"})
			require.NoError(t, err)
			require.True(t, found)
			e.kube.ClearActions()

			for range 2 { // a retry is refused the same way
				change, err := tt.write(ctx, e, cached)
				require.ErrorIs(t, err, write.ErrTrimmed)
				assert.ErrorContains(t, err, "ns/web: the object was trimmed by its informer: mutate changed the status")
				assert.Equal(t, write.Unchanged, change)
			}
			assert.Empty(t, e.kube.Actions(), "nothing is sent")
			assert.Equal(t, before, e.server(t))
		})
	}
}
