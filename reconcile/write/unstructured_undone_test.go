package write_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// deploymentServer is a one-Deployment API server that behaves as the
// real one does on an update: a mutating webhook pins the replicas to 1,
// the generation moves on when the spec or the annotations change, and
// the resourceVersion moves on when anything changes.
type deploymentServer struct {
	mu  sync.Mutex
	obj map[string]any
	rv  int
}

func (s *deploymentServer) get() *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (&unstructured.Unstructured{Object: s.obj}).DeepCopy()
}

func (s *deploymentServer) update(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := &unstructured.Unstructured{Object: s.obj}
	if u.GetResourceVersion() != old.GetResourceVersion() {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, u.GetName(), fmt.Errorf("stale"))
	}
	n := u.DeepCopy()
	require.NoError(nil, unstructured.SetNestedField(n.Object, int64(1), "spec", "replicas")) // the webhook
	st, _, _ := unstructured.NestedFieldCopy(old.Object, "status")
	if st != nil {
		_ = unstructured.SetNestedField(n.Object, st, "status") // the status subresource
	} else {
		unstructured.RemoveNestedField(n.Object, "status")
	}
	oldSpec, _, _ := unstructured.NestedFieldCopy(old.Object, "spec")
	newSpec, _, _ := unstructured.NestedFieldCopy(n.Object, "spec")
	n.SetGeneration(old.GetGeneration())
	if !equality.Semantic.DeepEqual(oldSpec, newSpec) || !equality.Semantic.DeepEqual(old.GetAnnotations(), n.GetAnnotations()) {
		n.SetGeneration(old.GetGeneration() + 1)
	}
	n.SetResourceVersion(old.GetResourceVersion())
	if !equality.Semantic.DeepEqual(old.Object, n.Object) {
		s.rv++
		n.SetResourceVersion(fmt.Sprint(s.rv))
	}
	s.obj = n.Object
	return n.DeepCopy(), nil
}

// recordGeneration is the Deployment controller: it records the
// generation in status.observedGeneration.
func (s *deploymentServer) recordGeneration() {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := &unstructured.Unstructured{Object: s.obj}
	if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g == u.GetGeneration() {
		return
	}
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	s.rv++
	u.SetResourceVersion(fmt.Sprint(s.rv))
}

// unstructuredClient is a write.Client of unstructured Deployments on a
// deploymentServer (as an adapter of a dynamic client would be).
type unstructuredClient struct{ s *deploymentServer }

func (c unstructuredClient) Get(context.Context, string, metav1.GetOptions) (*unstructured.Unstructured, error) {
	return c.s.get(), nil
}
func (c unstructuredClient) Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions) (*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("no create")
}
func (c unstructuredClient) Update(_ context.Context, u *unstructured.Unstructured, _ metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return c.s.update(u)
}
func (c unstructuredClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("no patch")
}
func (c unstructuredClient) Delete(context.Context, string, metav1.DeleteOptions) error {
	return fmt.Errorf("no delete")
}

// typedClient is the same server seen through typed Deployments.
type typedClient struct{ s *deploymentServer }

func toTyped(u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)
}

func (c typedClient) Get(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error) {
	return toTyped(c.s.get())
}
func (c typedClient) Create(context.Context, *appsv1.Deployment, metav1.CreateOptions) (*appsv1.Deployment, error) {
	return nil, fmt.Errorf("no create")
}
func (c typedClient) Update(_ context.Context, d *appsv1.Deployment, _ metav1.UpdateOptions) (*appsv1.Deployment, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return nil, err
	}
	u, err := c.s.update(&unstructured.Unstructured{Object: m})
	if err != nil {
		return nil, err
	}
	return toTyped(u)
}
func (c typedClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*appsv1.Deployment, error) {
	return nil, fmt.Errorf("no patch")
}
func (c typedClient) Delete(context.Context, string, metav1.DeleteOptions) error {
	return fmt.Errorf("no delete")
}

func newDeploymentServer(t *testing.T) *deploymentServer {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "1", Generation: 1,
			Annotations: map[string]string{"team": "a"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptrInt32(1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1},
	})
	require.NoError(t, err)
	return &deploymentServer{obj: m, rv: 1}
}

// tracedUndoneWrites runs reconciles of a whole Deployment whose change
// (two replicas) a webhook undoes, traced, with the Deployment's
// controller recording each new generation in the status, and counts the
// writes that changed the object.
func tracedUndoneWrites[T write.Object](t *testing.T, s *deploymentServer, c write.Client[T], want T, mutate func(T) error) int {
	inf := cache.NewTypedSharedIndexInformer[T](cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{}))
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	ctx := reconciletest.Context(t)
	deliver := func() {
		o, err := c.Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, inf.GetIndexer().Update(o))
	}
	deliver()
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	writes := 0
	for i := range 5 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := s.get().GetResourceVersion()
		_, change, err := objects.Ensure(rctx, c, want, mutate)
		span.End()
		require.NoError(t, err)
		assert.Equal(t, write.Unchanged, change, "reconcile %d: the webhook undid the change", i+1)
		if s.get().GetResourceVersion() != before {
			writes++
		}
		deliver()
		s.recordGeneration()
		deliver()
	}
	return writes
}

// The package doc and docs/tracing.md: a traced update a webhook undoes
// writes the annotation once, and the status in which a Deployment's
// controller records the generation that the annotation moved on does not
// count as a change. That holds for a typed Deployment, but not for the
// same Deployment read and written as an unstructured object (a dynamic
// client, an informer of unstructured objects): sameBut finds the status
// by the Go field Status, which unstructured.Unstructured has not, so the
// status counts, every traced reconcile writes a new annotation, which
// moves the generation on, which the controller records in the status,
// and so on: the write loop the change meant to end.
func TestTracedUnstructuredDeploymentUndoneSettles(t *testing.T) {
	t.Run("typed", func(t *testing.T) {
		s := newDeploymentServer(t)
		writes := tracedUndoneWrites[*appsv1.Deployment](t, s, typedClient{s},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, nginx(2, "nginx:1"))
		assert.Equal(t, 1, writes, "typed: traced reconciles whose change a webhook undoes wrote the Deployment %d times", writes)
	})
	t.Run("unstructured", func(t *testing.T) {
		s := newDeploymentServer(t)
		want := &unstructured.Unstructured{}
		want.SetAPIVersion("apps/v1")
		want.SetKind("Deployment")
		want.SetNamespace("ns")
		want.SetName("web")
		writes := tracedUndoneWrites[*unstructured.Unstructured](t, s, unstructuredClient{s}, want, func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		})
		assert.Equal(t, 1, writes, "unstructured: traced reconciles whose change a webhook undoes wrote the Deployment %d times (generation %d)",
			writes, s.get().GetGeneration())
	})
}

// A traced update of an unstructured Deployment with no annotations, that
// a webhook undoes, changed nothing but the trace context annotation: it
// is Unchanged (the package doc, Change), as it is for the typed
// Deployment. keepAnnotation leaves the unstructured copy of the answer an
// empty annotations map where the cached object has none, which
// equality.Semantic tells apart in an unstructured object (it does not in
// a typed one), so the verdict is Updated (a Foo controller would record a
// Synced event) and the object is not settled: the next reconcile writes
// the annotation again.
func TestTracedUnstructuredUpdateWithoutAnnotationsUndoneIsUnchanged(t *testing.T) {
	for _, typed := range []bool{true, false} {
		t.Run(map[bool]string{true: "typed", false: "unstructured"}[typed], func(t *testing.T) {
			s := newDeploymentServer(t)
			u := &unstructured.Unstructured{Object: s.obj}
			u.SetAnnotations(nil)
			var got []write.Change
			ctx := reconciletest.Context(t)
			tp := sdktrace.NewTracerProvider()
			defer func() { _ = tp.Shutdown(context.Background()) }()
			run := func(ensure func(ctx context.Context) (write.Change, error), deliver func()) {
				deliver()
				for range 2 {
					rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
					rctx, _ = tracing.WithWriteMark(rctx)
					change, err := ensure(rctx)
					span.End()
					require.NoError(t, err)
					got = append(got, change)
					deliver()
				}
			}
			if typed {
				inf := cache.NewTypedSharedIndexInformer[*appsv1.Deployment](cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{}))
				require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
				objects, c := write.New(inf), typedClient{s}
				run(func(ctx context.Context) (write.Change, error) {
					_, change, err := objects.Ensure(ctx, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, nginx(2, "nginx:1"))
					return change, err
				}, func() {
					d, err := c.Get(ctx, "web", metav1.GetOptions{})
					require.NoError(t, err)
					require.NoError(t, inf.GetIndexer().Update(d))
				})
			} else {
				inf := cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{}))
				require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
				objects, c := write.New(inf), unstructuredClient{s}
				want := &unstructured.Unstructured{}
				want.SetAPIVersion("apps/v1")
				want.SetKind("Deployment")
				want.SetNamespace("ns")
				want.SetName("web")
				run(func(ctx context.Context) (write.Change, error) {
					_, change, err := objects.Ensure(ctx, c, want, func(u *unstructured.Unstructured) error {
						return unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
					})
					return change, err
				}, func() {
					require.NoError(t, inf.GetIndexer().Update(s.get()))
				})
			}
			assert.Equal(t, []write.Change{write.Unchanged, write.Unchanged}, got, "the webhook undid the change; the second reconcile writes nothing (resourceVersion %s)",
				s.get().GetResourceVersion())
			assert.Equal(t, "2", s.get().GetResourceVersion(), "one write of the annotation")
		})
	}
}
