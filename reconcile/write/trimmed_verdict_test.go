package write_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// webhookClient writes objects through a mutating webhook: hook changes
// the object a patch (strategic or JSON merge) makes, before it is
// stored, as an admission webhook or the API server's defaulting would.
type webhookClient[T write.Object] struct {
	write.Client[T]
	hook func(obj T)
}

func (c webhookClient[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	var zero T
	if c.hook == nil || len(subresources) > 0 {
		return c.Client.Patch(ctx, name, pt, data, opts, subresources...)
	}
	live, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return zero, err
	}
	before, err := json.Marshal(live)
	if err != nil {
		return zero, err
	}
	schema := reflect.New(reflect.TypeOf(zero).Elem()).Interface()
	var merged []byte
	switch pt {
	case types.StrategicMergePatchType:
		merged, err = strategicpatch.StrategicMergePatch(before, data, schema)
	case types.MergePatchType:
		merged, err = jsonpatch.MergePatch(before, data)
	default:
		return zero, fmt.Errorf("the webhook takes no %s patch", pt)
	}
	if err != nil {
		return zero, err
	}
	obj := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
	if err := json.Unmarshal(merged, obj); err != nil {
		return zero, err
	}
	c.hook(obj)
	after, err := json.Marshal(obj)
	if err != nil {
		return zero, err
	}
	var admitted []byte
	if pt == types.StrategicMergePatchType {
		admitted, err = strategicpatch.CreateTwoWayMergePatch(before, after, schema)
	} else {
		admitted, err = jsonpatch.CreateMergePatch(before, after)
	}
	if err != nil {
		return zero, err
	}
	// The request's resourceVersion stays its precondition.
	var sent, patch map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		return zero, err
	}
	if err := json.Unmarshal(admitted, &patch); err != nil {
		return zero, err
	}
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if m, ok := sent["metadata"].(map[string]any); ok && m["resourceVersion"] != nil {
		meta["resourceVersion"] = m["resourceVersion"]
	}
	patch["metadata"] = meta
	if admitted, err = json.Marshal(patch); err != nil {
		return zero, err
	}
	return c.Client.Patch(ctx, name, pt, admitted, opts)
}

// pinReplicas is a webhook that keeps a Deployment at one replica.
func pinReplicas(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(1) }

func ptrInt32(n int32) *int32 { return &n }

// container returns the container named name of d, or nil.
func container(d *appsv1.Deployment, name string) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// The verdict of an update of a trimmed object is judged on what its
// cache shows (and what mutate set): a change the server keeps is Updated,
// one a webhook undoes is Unchanged, traced or not, and a change the
// server makes on its own to what the cache shows costs at most one more
// write; every case settles, with no writes once the object is as the
// server keeps it.
func TestTrimmedUpdateVerdict(t *testing.T) {
	cases := []struct {
		name string
		// keep names fields the cache keeps besides the replicas and the
		// containers' names and images.
		keep []string
		// prepare changes the server's object before the first reconcile.
		prepare func(d *appsv1.Deployment)
		hook    func(d *appsv1.Deployment)
		mutate  func(d *appsv1.Deployment) error
		traced  bool
		// between runs after each reconcile's object reached the cache.
		between func(t *testing.T, e *deploymentEnv)
		// want is the verdict of each reconcile; writes counts the ones
		// that changed the server's object.
		want   []write.Change
		writes int
		check  func(t *testing.T, d *appsv1.Deployment)
	}{{
		name:   "changed and kept",
		mutate: nginx(2, "nginx:2"),
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes: 1,
		check: func(t *testing.T, d *appsv1.Deployment) {
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			assert.Equal(t, "nginx:2", container(d, "nginx").Image)
		},
	}, {
		name:   "changed and kept, traced",
		mutate: nginx(2, "nginx:2"),
		traced: true,
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name:    "kept but zero in the cache, set by mutate and kept",
		prepare: func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
		hook:    func(*appsv1.Deployment) {},
		mutate:  nginx(2, "nginx:1"),
		traced:  true,
		want:    []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes:  1,
		check:   func(t *testing.T, d *appsv1.Deployment) { assert.Equal(t, int32(2), *d.Spec.Replicas) },
	}, {
		name:   "kept, set to zero by mutate, and kept",
		hook:   func(*appsv1.Deployment) {},
		mutate: nginx(0, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes: 1,
		check:  func(t *testing.T, d *appsv1.Deployment) { assert.Equal(t, int32(0), *d.Spec.Replicas) },
	}, {
		name:    "a field kept as zero, another changed and undone, traced",
		prepare: func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(0) },
		hook:    func(d *appsv1.Deployment) { container(d, "nginx").Image = "nginx:1" },
		mutate:  nginx(0, "nginx:2"),
		traced:  true,
		want:    []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes:  1,
	}, {
		name:   "changed and undone, untraced",
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 0,
	}, {
		name:   "changed and undone, traced: the annotation is written once",
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "a container mutate adds by name, undone, traced",
		hook: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:2] },
		mutate: func(d *appsv1.Deployment) error {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "logs", Image: "logs:1"})
			return nil
		},
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "changed and undone, a default added to a kept field the cache shows",
		keep: []string{"spec.template.spec.containers.imagePullPolicy"},
		prepare: func(d *appsv1.Deployment) {
			container(d, "sidecar").ImagePullPolicy = corev1.PullAlways
		},
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if c := container(d, "nginx"); c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		// The default is a change the cache shows: the next write, of the
		// annotation alone, settles.
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 2,
		check: func(t *testing.T, d *appsv1.Deployment) {
			assert.Equal(t, corev1.PullIfNotPresent, container(d, "nginx").ImagePullPolicy)
			assert.Equal(t, int32(1), *d.Spec.Replicas)
		},
	}, {
		name: "changed and undone, a default added to a field the cache shows on no container",
		keep: []string{"spec.template.spec.containers.imagePullPolicy"},
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if c := container(d, "nginx"); c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "a webhook injects a container and undoes the change",
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if container(d, "injected") == nil {
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "injected", Image: "mesh:1"})
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 2,
	}, {
		name:   "changed and undone, traced, the workload's controller records each generation in the status",
		keep:   []string{"status.observedGeneration"},
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		traced: true,
		between: func(t *testing.T, e *deploymentEnv) {
			d := e.server(t)
			if d.Status.ObservedGeneration == d.Generation {
				return
			}
			d.Status.ObservedGeneration = d.Generation
			_, err := e.kube.AppsV1().Deployments("ns").UpdateStatus(reconciletest.Context(t), d, metav1.UpdateOptions{})
			require.NoError(t, err)
			e.deliver(t)
		},
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDeploymentEnvKeeping(t, tc.keep...)
			ctx := reconciletest.Context(t)
			if tc.prepare != nil {
				d := e.server(t)
				tc.prepare(d)
				_, err := e.kube.AppsV1().Deployments("ns").Update(ctx, d, metav1.UpdateOptions{})
				require.NoError(t, err)
				e.deliver(t)
			}
			tp := sdktrace.NewTracerProvider()
			defer func() { _ = tp.Shutdown(context.Background()) }()
			client := webhookClient[*appsv1.Deployment]{Client: e.client(), hook: tc.hook}
			var got []write.Change
			writes := 0
			for i := range tc.want {
				rctx, end := ctx, func() {}
				if tc.traced {
					var span trace.Span
					rctx, span = tp.Tracer("test").Start(ctx, fmt.Sprintf("reconcile %d", i+1))
					rctx, _ = tracing.WithWriteMark(rctx)
					end = func() { span.End() }
				}
				before := e.server(t).ResourceVersion
				_, change, err := e.objects.Ensure(rctx, client, webWant(), tc.mutate)
				end()
				require.NoError(t, err)
				got = append(got, change)
				if e.server(t).ResourceVersion != before {
					writes++
				}
				e.deliver(t)
				if tc.between != nil {
					tc.between(t, e)
				}
			}
			assert.Equal(t, tc.want, got, "the verdicts")
			assert.Equal(t, tc.writes, writes, "the writes that changed the object (annotation %q)", e.server(t).Annotations[tracing.Annotation])
			if tc.check != nil {
				tc.check(t, e.server(t))
			}
		})
	}
}

// A trimmed custom resource, patched with a JSON merge patch: a traced
// update a webhook undoes writes the annotation once, then settles; a
// change the server keeps is Updated.
func TestTrimmedCustomResourceUndoneSettles(t *testing.T) {
	foos := foofake.NewClientset()
	reconciletest.Strict(foos)
	var trim trimmer
	require.NoError(t, informer.Trim[*samplev1alpha1.Foo](&trim, "spec.replicas"))
	inf := fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	ctx := reconciletest.Context(t)
	pinned := true
	client := webhookClient[*samplev1alpha1.Foo]{Client: foos.SamplecontrollerV1alpha1().Foos("ns"), hook: func(f *samplev1alpha1.Foo) {
		if pinned {
			f.Spec.Replicas = ptrInt32(1)
		}
	}}
	created, err := client.Create(ctx, &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f"},
		Spec: samplev1alpha1.FooSpec{DeploymentName: "web", Replicas: ptrInt32(1)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(trimmed(t, &trim, created)))
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcile := func() (write.Change, bool) {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before, err := client.Get(ctx, "f", metav1.GetOptions{})
		require.NoError(t, err)
		_, change, err := objects.Ensure(rctx, client, &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f"}}, func(f *samplev1alpha1.Foo) error {
			f.Spec.Replicas = ptrInt32(3)
			return nil
		})
		span.End()
		require.NoError(t, err)
		after, err := client.Get(ctx, "f", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, inf.GetIndexer().Update(trimmed(t, &trim, after)))
		return change, after.ResourceVersion != before.ResourceVersion
	}
	change, wrote := reconcile()
	assert.Equal(t, write.Unchanged, change)
	assert.True(t, wrote, "the first traced write carries the annotation")
	for i := range 3 {
		change, wrote = reconcile()
		assert.Equal(t, write.Unchanged, change, "reconcile %d", i+2)
		assert.False(t, wrote, "reconcile %d wrote the object again", i+2)
	}
	pinned = false
	change, wrote = reconcile()
	assert.Equal(t, write.Updated, change, "the webhook lets the change through")
	assert.True(t, wrote)
	change, wrote = reconcile()
	assert.Equal(t, write.Unchanged, change)
	assert.False(t, wrote)
}
