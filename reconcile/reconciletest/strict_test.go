package reconciletest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

const ns = "ns"

var (
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
	replicaSetsGVR = appsv1.SchemeGroupVersion.WithResource("replicasets")
	configMapsGVR  = corev1.SchemeGroupVersion.WithResource("configmaps")
	foosGVR        = samplev1alpha1.SchemeGroupVersion.WithResource("foos")
)

// strictEnv is a kube and a foo fake clientset made strict together.
type strictEnv struct {
	api  *reconciletest.StrictAPI
	kube *kubefake.Clientset
	foos *foofake.Clientset
}

func newStrictEnv() *strictEnv {
	e := &strictEnv{kube: kubefake.NewClientset(), foos: foofake.NewClientset()}
	e.api = reconciletest.Strict(e.kube, e.foos)
	return e
}

func (e *strictEnv) deployments() interface {
	Create(context.Context, *appsv1.Deployment, metav1.CreateOptions) (*appsv1.Deployment, error)
	Update(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
	UpdateStatus(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
	Get(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*appsv1.Deployment, error)
} {
	return e.kube.AppsV1().Deployments(ns)
}

// deployment returns a Deployment named name with one replica.
func deployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}

// newFoo returns a Foo named name.
func newFoo(name string) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
	}
}

// ownerRef is a reference to owner, of the given kind.
func ownerRef(owner metav1.Object, gvk string, block bool) metav1.OwnerReference {
	apiVersion, kind, _ := cutLast(gvk, "/")
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID()}
	if block {
		r.BlockOwnerDeletion = ptr.To(true)
	}
	return r
}

func cutLast(s, sep string) (string, string, bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

const (
	fooKind        = "samplecontroller.k8s.io/v1alpha1/Foo"
	deploymentKind = "apps/v1/Deployment"
)

func TestStrictResourceVersions(t *testing.T) {
	ctx := context.Background()
	kube, other := kubefake.NewClientset(), kubefake.NewClientset()
	reconciletest.Strict(kube, other)
	cms := kube.CoreV1().ConfigMaps("ns")

	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "1"}}
	created, err := cms.Create(ctx, mine, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1001", created.ResourceVersion)
	assert.Empty(t, mine.ResourceVersion, "the caller's object is not changed")
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1001", got.ResourceVersion)

	// An update from the current version succeeds and bumps it.
	got.Data["k"] = "2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1002", updated.ResourceVersion)

	// The stale copy conflicts, as it would on an API server.
	got.Data["k"] = "3"
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale update: %v", err)

	// Without a version the update is unconditional.
	got.ResourceVersion = ""
	updated, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1003", updated.ResourceVersion)

	// An update that changes nothing stores nothing: the version stays.
	updated, err = cms.Update(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1003", updated.ResourceVersion)

	// Patches: with a stale version in the patch they conflict, without
	// one they apply.
	_, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1001"},"data":{"k":"4"}}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsConflict(err), "stale patch: %v", err)
	patched, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"5"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1004", patched.ResourceVersion)
	assert.Equal(t, "5", patched.Data["k"])
	_, err = cms.Patch(ctx, "missing", types.MergePatchType, []byte(`{"data":{"k":"5"}}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsNotFound(err), "patch of a missing object: %v", err)
	_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsNotFound(err), "update of a missing object: %v", err)

	// A create that carries a version is refused.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "7"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsBadRequest(err), "create with a version: %v", err)
	_, err = cms.Create(ctx, mine, metav1.CreateOptions{})
	require.True(t, apierrors.IsAlreadyExists(err), "second create: %v", err)

	// Versions increase across the clientsets given together.
	d, err := other.AppsV1().Deployments("ns").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1006", d.ResourceVersion, "1005 went to the refused second create")

	// Status updates are checked like updates.
	d.Status.Replicas = 1
	d, err = other.AppsV1().Deployments("ns").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	d.ResourceVersion = "1006"
	_, err = other.AppsV1().Deployments("ns").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale status update: %v", err)

	// Informers see the versions.
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	lister := factory.Core().V1().ConfigMaps().Lister()
	reconciletest.StartInformers(t, factory)
	cached, err := lister.ConfigMaps("ns").Get("a")
	require.NoError(t, err)
	assert.Equal(t, "1004", cached.ResourceVersion)
	fresh := cached.DeepCopy()
	fresh.Data["k"] = "6"
	_, err = cms.Update(ctx, fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := lister.ConfigMaps("ns").Get("a")
		return err == nil && c.ResourceVersion == "1008"
	}, 10*time.Second, time.Millisecond, "the watch delivers the new version")
	_, err = cms.Update(ctx, cached, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "an update from the old cached copy conflicts")
}

func TestStrictOtherSubresources(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	d, err := e.deployments().Create(ctx, deployment("web"), metav1.CreateOptions{})
	require.NoError(t, err)

	// A subresource the rules do not know gets versions checked and
	// stamped, and nothing else.
	changed := d.DeepCopy()
	changed.Spec.Replicas = ptr.To[int32](3)
	changed.Status.Replicas = 3
	obj, err := e.kube.Invokes(k8stesting.NewUpdateSubresourceAction(deploymentsGVR, "other", ns, changed), nil)
	require.NoError(t, err)
	got := obj.(*appsv1.Deployment)
	assert.Equal(t, "1002", got.ResourceVersion)
	assert.Equal(t, int32(3), got.Status.Replicas, "not a status write: no rule")
	_, err = e.kube.Invokes(k8stesting.NewUpdateSubresourceAction(deploymentsGVR, "other", ns, changed), nil)
	require.True(t, apierrors.IsConflict(err), "stale: %v", err)

	// A subresource create of the object's own type is such an update.
	got.Spec.Replicas = ptr.To[int32](4)
	obj, err = e.kube.Invokes(k8stesting.NewCreateSubresourceAction(deploymentsGVR, "web", "other", ns, got), nil)
	require.NoError(t, err)
	assert.Equal(t, "1003", obj.(*appsv1.Deployment).ResourceVersion)

	// A Get of a subresource is left to the fake.
	_, err = e.kube.Invokes(k8stesting.NewGetSubresourceAction(deploymentsGVR, ns, "other", "web"), nil)
	require.NoError(t, err)
}

func TestStrictUIDsAndTimestamps(t *testing.T) {
	tests := []struct {
		name string
		// write changes the created Deployment d.
		write func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error)
		check func(t *testing.T, created, written *appsv1.Deployment, err error)
	}{{
		name:  "create ignores the request's uid and sets creationTimestamp",
		write: func(context.Context, *strictEnv, *appsv1.Deployment) (*appsv1.Deployment, error) { return nil, nil },
		check: func(t *testing.T, created, _ *appsv1.Deployment, _ error) {
			assert.NotEmpty(t, created.UID)
			assert.NotEqual(t, types.UID("mine"), created.UID)
			assert.False(t, created.CreationTimestamp.IsZero())
			assert.Equal(t, created.CreationTimestamp.Rfc3339Copy(), created.CreationTimestamp, "whole seconds, as an API server stores them")
			assert.Nil(t, created.DeletionTimestamp, "dropped")
			assert.Nil(t, created.DeletionGracePeriodSeconds, "dropped")
		},
	}, {
		name: "an update without uid keeps it, and keeps creationTimestamp",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			d.UID = ""
			d.CreationTimestamp = metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
			d.Labels["x"] = "y"
			return e.deployments().Update(ctx, d, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, created, written *appsv1.Deployment, err error) {
			require.NoError(t, err)
			assert.Equal(t, created.UID, written.UID)
			assert.Equal(t, created.CreationTimestamp, written.CreationTimestamp)
		},
	}, {
		name: "an update with another uid conflicts",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			d.UID = "other"
			return e.deployments().Update(ctx, d, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, _, _ *appsv1.Deployment, err error) {
			assert.True(t, apierrors.IsConflict(err), "%v", err)
		},
	}, {
		name: "a patch that changes the uid is invalid",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			return e.deployments().Patch(ctx, d.Name, types.MergePatchType, []byte(`{"metadata":{"uid":"other"}}`), metav1.PatchOptions{})
		},
		check: func(t *testing.T, _, _ *appsv1.Deployment, err error) {
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.ErrorContains(t, err, "metadata.uid")
		},
	}, {
		name: "a patch of creationTimestamp is ignored",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			return e.deployments().Patch(ctx, d.Name, types.MergePatchType, []byte(`{"metadata":{"creationTimestamp":"2000-01-01T00:00:00Z"}}`), metav1.PatchOptions{})
		},
		check: func(t *testing.T, created, written *appsv1.Deployment, err error) {
			require.NoError(t, err)
			assert.Equal(t, created.CreationTimestamp, written.CreationTimestamp)
			assert.Equal(t, created.ResourceVersion, written.ResourceVersion, "nothing changed")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := newStrictEnv()
			d := deployment("web")
			d.UID = "mine"
			d.DeletionTimestamp = ptr.To(metav1.Now())
			d.DeletionGracePeriodSeconds = ptr.To[int64](30)
			created, err := e.deployments().Create(ctx, d, metav1.CreateOptions{})
			require.NoError(t, err)
			written, err := tt.write(ctx, e, created.DeepCopy())
			tt.check(t, created, written, err)
		})
	}
}

// With WithClock, creationTimestamp and deletionTimestamp come from the
// test's clock, to the second, for custom resources and built-in kinds
// alike.
func TestStrictTimestampsFromTheClock(t *testing.T) {
	// Each case creates an object with a finalizer, deletes it and reads it
	// back.
	tests := []struct {
		name      string
		lifecycle func(ctx context.Context, e *strictEnv, clk *clocktesting.FakeClock) (created, deleting metav1.Object, err error)
	}{{
		name: "a built-in kind",
		lifecycle: func(ctx context.Context, e *strictEnv, clk *clocktesting.FakeClock) (metav1.Object, metav1.Object, error) {
			cms := e.kube.CoreV1().ConfigMaps(ns)
			created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Finalizers: []string{"example.com/keep"}}}, metav1.CreateOptions{})
			if err != nil {
				return nil, nil, err
			}
			clk.Step(time.Hour)
			if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				return nil, nil, err
			}
			deleting, err := cms.Get(ctx, "a", metav1.GetOptions{})
			return created, deleting, err
		},
	}, {
		name: "a custom resource",
		lifecycle: func(ctx context.Context, e *strictEnv, clk *clocktesting.FakeClock) (metav1.Object, metav1.Object, error) {
			foos := e.foos.SamplecontrollerV1alpha1().Foos(ns)
			foo := newFoo("a")
			foo.Finalizers = []string{"example.com/keep"}
			created, err := foos.Create(ctx, foo, metav1.CreateOptions{})
			if err != nil {
				return nil, nil, err
			}
			clk.Step(time.Hour)
			if err := foos.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				return nil, nil, err
			}
			deleting, err := foos.Get(ctx, "a", metav1.GetOptions{})
			return created, deleting, err
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 11, 26, 12, 0, 0, 700_000_000, time.UTC)
			clk := clocktesting.NewFakeClock(start)
			e := newStrictEnv()
			e.api.WithClock(clk)
			created, deleting, err := tt.lifecycle(t.Context(), e, clk)
			require.NoError(t, err)
			assert.Equal(t, start.Truncate(time.Second), created.GetCreationTimestamp().Time.UTC())
			require.NotNil(t, deleting.GetDeletionTimestamp())
			assert.Equal(t, start.Add(time.Hour).Truncate(time.Second), deleting.GetDeletionTimestamp().Time.UTC())
			assert.Equal(t, start.Truncate(time.Second), deleting.GetCreationTimestamp().Time.UTC(), "kept")
		})
	}
	assert.Panics(t, func() { reconciletest.Strict(kubefake.NewClientset()).WithClock(nil) })
}

func TestStrictGenerateName(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "cm-"}}
	a, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	b, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `^cm-[a-z0-9]{5}$`, a.Name)
	assert.NotEqual(t, a.Name, b.Name)
	assert.Empty(t, cm.Name, "the caller's object is not changed")
}

func TestStrictGeneration(t *testing.T) {
	tests := []struct {
		name string
		// run writes and returns the written object's generation.
		run  func(ctx context.Context, t *testing.T, e *strictEnv) int64
		want int64
	}{
		{"a Deployment is created with generation 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := deployment("web")
			d.Generation = 7
			d, err := e.deployments().Create(ctx, d, metav1.CreateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 1},
		{"a spec change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d.Spec.Replicas = ptr.To[int32](2)
			d, err := e.deployments().Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 2},
		{"a spec patch adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d, err := e.deployments().Patch(ctx, d.Name, types.StrategicMergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 2},
		{"a label change does not", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d.Labels["tier"] = "front"
			d.Generation = 9 // a request cannot set it
			d, err := e.deployments().Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 1},
		{"a Deployment's annotation change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d.Annotations = map[string]string{"note": "x"}
			d, err := e.deployments().Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 2},
		{"a status write does not", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d.Status.Replicas = 1
			d.Spec.Replicas = ptr.To[int32](5)
			d, err := e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 1},
		{"a status change through the main resource does not", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d := createDeployment(ctx, t, e, "web")
			d.Status.Replicas = 1
			d, err := e.deployments().Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 1},
		{"a Foo is created with generation 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			return createFoo(ctx, t, e, "a").Generation
		}, 1},
		{"a Foo's spec change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			f := createFoo(ctx, t, e, "a")
			f.Spec.Replicas = ptr.To[int32](2)
			f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
			require.NoError(t, err)
			return f.Generation
		}, 2},
		{"a Foo's annotation change does not", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			f := createFoo(ctx, t, e, "a")
			f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, f.Name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"x"}}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			return f.Generation
		}, 1},
		{"a Foo's status write does not", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			f := createFoo(ctx, t, e, "a")
			f.Status.AvailableReplicas = 1
			f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(ctx, f, metav1.UpdateOptions{})
			require.NoError(t, err)
			return f.Generation
		}, 1},
		{"marking a Foo for deletion adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			f := newFoo("a")
			f.Finalizers = []string{"x"}
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, f, metav1.CreateOptions{})
			require.NoError(t, err)
			require.NoError(t, e.foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "a", metav1.DeleteOptions{}))
			require.NoError(t, e.foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "a", metav1.DeleteOptions{}), "again: no change")
			f, err = e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
			require.NoError(t, err)
			return f.Generation
		}, 2},
		{"a ConfigMap has none", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			cm, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			cm.Data = map[string]string{"k": "v"}
			cm, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(t, err)
			return cm.Generation
		}, 0},
		{"a Service has none", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			svc, err := e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			svc.Spec.Ports = []corev1.ServicePort{{Port: 80}}
			svc, err = e.kube.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
			require.NoError(t, err)
			return svc.Generation
		}, 0},
		{"a Lease is created with none", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			return createLease(ctx, t, e, "a").Generation
		}, 0},
		{"a Lease's spec change adds none", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			l := createLease(ctx, t, e, "a")
			l.Spec.HolderIdentity = ptr.To("b")
			l, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			require.NoError(t, err)
			return l.Generation
		}, 0},
		{"a Lease's spec patch adds none", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			createLease(ctx, t, e, "a")
			l, err := e.kube.CoordinationV1().Leases(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"b"}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			return l.Generation
		}, 0},
		{"a Lease keeps the generation its create carries", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			l := newLease("a")
			l.Generation = 3
			l, err := e.kube.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{})
			require.NoError(t, err)
			return l.Generation
		}, 3},
		{"a Lease's update cannot set one", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			l := createLease(ctx, t, e, "a")
			l.Generation = 3
			l.Spec.HolderIdentity = ptr.To("b")
			l, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			require.NoError(t, err)
			return l.Generation
		}, 0},
		{"a PodDisruptionBudget's spec change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			p, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, podDisruptionBudget("a"), metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), p.Generation, "on create")
			p.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
			p, err = e.kube.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, p, metav1.UpdateOptions{})
			require.NoError(t, err)
			return p.Generation
		}, 2},
		{"a Pod's spec change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			p, err := e.kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), p.Generation, "on create")
			p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			p, err = e.kube.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			require.NoError(t, err)
			return p.Generation
		}, 2},
		{"a PodTemplate's template change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			pt, err := e.kube.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), pt.Generation, "on create")
			pt.Template.Spec.NodeName = "node"
			pt, err = e.kube.CoreV1().PodTemplates(ns).Update(ctx, pt, metav1.UpdateOptions{})
			require.NoError(t, err)
			return pt.Generation
		}, 2},
		{"an EndpointSlice's label change adds 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			s, err := e.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "a"}, AddressType: discoveryv1.AddressTypeIPv4}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), s.Generation, "on create")
			s.Labels = map[string]string{"x": "y"}
			s, err = e.kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{})
			require.NoError(t, err)
			return s.Generation
		}, 2},
		{"a PriorityClass keeps generation 1", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			pc, err := e.kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Value: 1}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), pc.Generation, "on create")
			pc.Description = "changed"
			pc, err = e.kube.SchedulingV1().PriorityClasses().Update(ctx, pc, metav1.UpdateOptions{})
			require.NoError(t, err)
			return pc.Generation
		}, 1},
		{"a CSIDriver counts spec changes from 0", func(ctx context.Context, t *testing.T, e *strictEnv) int64 {
			d, err := e.kube.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(0), d.Generation, "on create")
			d.Spec.AttachRequired = ptr.To(true)
			d, err = e.kube.StorageV1().CSIDrivers().Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			return d.Generation
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.run(context.Background(), t, newStrictEnv()))
		})
	}
}

func createDeployment(ctx context.Context, t *testing.T, e *strictEnv, name string) *appsv1.Deployment {
	t.Helper()
	d, err := e.deployments().Create(ctx, deployment(name), metav1.CreateOptions{})
	require.NoError(t, err)
	return d
}

// newLease returns a Lease named name held by "a".
func newLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)},
	}
}

func createLease(ctx context.Context, t *testing.T, e *strictEnv, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := e.kube.CoordinationV1().Leases(ns).Create(ctx, newLease(name), metav1.CreateOptions{})
	require.NoError(t, err)
	return l
}

// podDisruptionBudget returns a PodDisruptionBudget named name.
func podDisruptionBudget(name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}

func createFoo(ctx context.Context, t *testing.T, e *strictEnv, name string, mods ...func(*samplev1alpha1.Foo)) *samplev1alpha1.Foo {
	t.Helper()
	f := newFoo(name)
	for _, mod := range mods {
		mod(f)
	}
	f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, f, metav1.CreateOptions{})
	require.NoError(t, err)
	return f
}

func TestStrictStatusSubresource(t *testing.T) {
	ctx := context.Background()
	t.Run("a create drops the status", func(t *testing.T) {
		e := newStrictEnv()
		d := deployment("web")
		d.Status.Replicas = 3
		d, err := e.deployments().Create(ctx, d, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Zero(t, d.Status.Replicas)
		f := createFoo(ctx, t, e, "a", func(f *samplev1alpha1.Foo) { f.Status.AvailableReplicas = 3 })
		assert.Zero(t, f.Status.AvailableReplicas)
	})

	deploymentTests := []struct {
		name  string
		write func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error)
		check func(t *testing.T, got *appsv1.Deployment)
	}{{
		name: "an update keeps the stored status",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			d.Status.Replicas = 5
			d.Spec.Replicas = ptr.To[int32](2)
			return e.deployments().Update(ctx, d, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, got *appsv1.Deployment) {
			assert.Equal(t, int32(1), got.Status.Replicas)
			assert.Equal(t, int32(2), *got.Spec.Replicas)
		},
	}, {
		name: "a status update keeps spec and labels, but not annotations",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			d.Status.Replicas = 5
			d.Spec.Replicas = ptr.To[int32](2)
			d.Labels["x"] = "y"
			d.Annotations = map[string]string{"note": "x"}
			return e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, got *appsv1.Deployment) {
			assert.Equal(t, int32(5), got.Status.Replicas)
			assert.Equal(t, int32(1), *got.Spec.Replicas)
			assert.Equal(t, map[string]string{"app": "web"}, got.Labels)
			assert.Equal(t, map[string]string{"note": "x"}, got.Annotations)
			assert.Equal(t, int64(1), got.Generation)
		},
	}, {
		name: "a status patch writes the status only",
		write: func(ctx context.Context, e *strictEnv, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			return e.deployments().Patch(ctx, d.Name, types.MergePatchType, []byte(`{"spec":{"replicas":4},"status":{"replicas":6}}`), metav1.PatchOptions{}, "status")
		},
		check: func(t *testing.T, got *appsv1.Deployment) {
			assert.Equal(t, int32(6), got.Status.Replicas)
			assert.Equal(t, int32(1), *got.Spec.Replicas)
		},
	}}
	for _, tt := range deploymentTests {
		t.Run("Deployment: "+tt.name, func(t *testing.T) {
			e := newStrictEnv()
			d := createDeployment(ctx, t, e, "web")
			d.Status.Replicas = 1
			d, err := e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			got, err := tt.write(ctx, e, d.DeepCopy())
			require.NoError(t, err)
			tt.check(t, got)
			stored, err := e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, got, stored, "what the writer got is what is stored")
		})
	}

	fooTests := []struct {
		name  string
		write func(ctx context.Context, e *strictEnv, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, error)
		check func(t *testing.T, got *samplev1alpha1.Foo)
	}{{
		name: "an update keeps the stored status",
		write: func(ctx context.Context, e *strictEnv, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, error) {
			f.Status.AvailableReplicas = 5
			f.Spec.Replicas = ptr.To[int32](2)
			return e.foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, got *samplev1alpha1.Foo) {
			assert.Equal(t, int32(1), got.Status.AvailableReplicas)
			assert.Equal(t, int32(2), *got.Spec.Replicas)
			assert.Equal(t, int64(2), got.Generation)
		},
	}, {
		name: "a status update changes the status only",
		write: func(ctx context.Context, e *strictEnv, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, error) {
			f.Status.AvailableReplicas = 5
			f.Spec.Replicas = ptr.To[int32](2)
			f.Labels["x"] = "y"
			f.Annotations = map[string]string{"note": "x"}
			f.Finalizers = []string{"x"}
			return e.foos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(ctx, f, metav1.UpdateOptions{})
		},
		check: func(t *testing.T, got *samplev1alpha1.Foo) {
			assert.Equal(t, int32(5), got.Status.AvailableReplicas)
			assert.Equal(t, int32(1), *got.Spec.Replicas)
			assert.Equal(t, map[string]string{"app": "a"}, got.Labels)
			assert.Empty(t, got.Annotations)
			assert.Empty(t, got.Finalizers)
			assert.Equal(t, int64(1), got.Generation)
		},
	}, {
		name: "a status patch changes the status only",
		write: func(ctx context.Context, e *strictEnv, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, error) {
			return e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, f.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"x":"y"}},"spec":{"replicas":4},"status":{"availableReplicas":6}}`), metav1.PatchOptions{}, "status")
		},
		check: func(t *testing.T, got *samplev1alpha1.Foo) {
			assert.Equal(t, int32(6), got.Status.AvailableReplicas)
			assert.Equal(t, int32(1), *got.Spec.Replicas)
			assert.Equal(t, map[string]string{"app": "a"}, got.Labels)
		},
	}, {
		name: "a stale status update conflicts",
		write: func(ctx context.Context, e *strictEnv, f *samplev1alpha1.Foo) (*samplev1alpha1.Foo, error) {
			f.ResourceVersion = "1"
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(ctx, f, metav1.UpdateOptions{})
			assert.True(t, apierrors.IsConflict(err), "%v", err)
			return e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, f.Name, metav1.GetOptions{})
		},
		check: func(t *testing.T, got *samplev1alpha1.Foo) {
			assert.Equal(t, int32(1), got.Status.AvailableReplicas)
		},
	}}
	for _, tt := range fooTests {
		t.Run("Foo: "+tt.name, func(t *testing.T) {
			e := newStrictEnv()
			f := createFoo(ctx, t, e, "a")
			f.Status.AvailableReplicas = 1
			f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(ctx, f, metav1.UpdateOptions{})
			require.NoError(t, err)
			got, err := tt.write(ctx, e, f.DeepCopy())
			require.NoError(t, err)
			tt.check(t, got)
			stored, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, got, stored, "what the writer got is what is stored")
		})
	}
}

func TestStrictFinalizersAndDeletion(t *testing.T) {
	foos := func(e *strictEnv) interface {
		Update(context.Context, *samplev1alpha1.Foo, metav1.UpdateOptions) (*samplev1alpha1.Foo, error)
		Get(context.Context, string, metav1.GetOptions) (*samplev1alpha1.Foo, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*samplev1alpha1.Foo, error)
	} {
		return e.foos.SamplecontrollerV1alpha1().Foos(ns)
	}
	tests := []struct {
		name       string
		finalizers []string
		// run acts on the created Foo f; gone tells whether it is removed.
		run  func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) (gone bool)
		want func(t *testing.T, before, after *samplev1alpha1.Foo)
	}{{
		name:       "a delete marks an object with finalizers",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			return false
		},
		want: func(t *testing.T, before, after *samplev1alpha1.Foo) {
			require.NotNil(t, after.DeletionTimestamp)
			assert.Equal(t, ptr.To[int64](0), after.DeletionGracePeriodSeconds)
			assert.Equal(t, before.Generation+1, after.Generation)
			assert.NotEqual(t, before.ResourceVersion, after.ResourceVersion)
			assert.Equal(t, []string{"x"}, after.Finalizers)
		},
	}, {
		name:       "a second delete changes nothing",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			marked, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err)
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			again, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, marked, again)
			return false
		},
		want: func(t *testing.T, _, after *samplev1alpha1.Foo) { assert.NotNil(t, after.DeletionTimestamp) },
	}, {
		name:       "no finalizer can be added while it is deleted",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			marked, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err)
			marked.Finalizers = append(marked.Finalizers, "y")
			_, err = foos(e).Update(ctx, marked, metav1.UpdateOptions{})
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.ErrorContains(t, err, "no new finalizers can be added if the object is being deleted")
			_, err = foos(e).Patch(ctx, f.Name, types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"y"}]`), metav1.PatchOptions{})
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			return false
		},
		want: func(t *testing.T, _, after *samplev1alpha1.Foo) { assert.Equal(t, []string{"x"}, after.Finalizers) },
	}, {
		name:       "an update cannot clear deletionTimestamp",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			marked, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err)
			marked.DeletionTimestamp = nil
			marked.DeletionGracePeriodSeconds = nil
			marked.Labels["x"] = "y"
			_, err = foos(e).Update(ctx, marked, metav1.UpdateOptions{})
			require.NoError(t, err)
			return false
		},
		want: func(t *testing.T, _, after *samplev1alpha1.Foo) {
			assert.NotNil(t, after.DeletionTimestamp)
			assert.Equal(t, "y", after.Labels["x"])
		},
	}, {
		name: "an update cannot set deletionTimestamp",
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			f.DeletionTimestamp = ptr.To(metav1.Now())
			_, err := foos(e).Update(ctx, f, metav1.UpdateOptions{})
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.ErrorContains(t, err, "metadata.deletionTimestamp")
			return false
		},
		want: func(t *testing.T, before, after *samplev1alpha1.Foo) { assert.Equal(t, before, after) },
	}, {
		name:       "an update that removes the last finalizer removes the object",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			marked, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err)
			marked.Finalizers = nil
			written, err := foos(e).Update(ctx, marked, metav1.UpdateOptions{})
			require.NoError(t, err)
			assert.Equal(t, f.Name, written.Name, "the writer gets the object it wrote")
			assert.NotNil(t, written.DeletionTimestamp)
			return true
		},
	}, {
		name:       "a patch that removes the last finalizer removes the object",
		finalizers: []string{"x", "y"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			_, err := foos(e).Patch(ctx, f.Name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`), metav1.PatchOptions{})
			require.NoError(t, err)
			_, err = foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			require.NoError(t, err, "one finalizer is left")
			written, err := foos(e).Patch(ctx, f.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			assert.Empty(t, written.Finalizers)
			return true
		},
	}, {
		name: "an object without finalizers is removed at once",
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{}))
			err := foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{})
			assert.True(t, apierrors.IsNotFound(err), "%v", err)
			return true
		},
	}, {
		name:       "delete preconditions that do not match conflict",
		finalizers: []string{"x"},
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			err := foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("other")}})
			assert.True(t, apierrors.IsConflict(err), "uid: %v", err)
			err = foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}})
			assert.True(t, apierrors.IsConflict(err), "resourceVersion: %v", err)
			return false
		},
		want: func(t *testing.T, before, after *samplev1alpha1.Foo) { assert.Equal(t, before, after) },
	}, {
		name: "delete preconditions that match",
		run: func(ctx context.Context, t *testing.T, e *strictEnv, f *samplev1alpha1.Foo) bool {
			require.NoError(t, foos(e).Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &f.UID, ResourceVersion: &f.ResourceVersion}}))
			return true
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := newStrictEnv()
			f := createFoo(ctx, t, e, "a", func(f *samplev1alpha1.Foo) { f.Finalizers = tt.finalizers })
			gone := tt.run(ctx, t, e, f.DeepCopy())
			after, err := foos(e).Get(ctx, f.Name, metav1.GetOptions{})
			if gone {
				require.True(t, apierrors.IsNotFound(err), "the Foo is gone: %v", err)
				return
			}
			require.NoError(t, err)
			tt.want(t, f, after)
		})
	}
}

// eventLog records what an informer's handler sees.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(verb string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s %s deleting=%t finalizers=%v", verb, m.GetName(), m.GetDeletionTimestamp() != nil, m.GetFinalizers()))
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func watchDeployments(t *testing.T, kube *kubefake.Clientset) *eventLog {
	t.Helper()
	log := &eventLog{}
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	_, err := factory.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { log.add("ADDED", obj) },
		UpdateFunc: func(_, obj any) { log.add("MODIFIED", obj) },
		DeleteFunc: func(obj any) { log.add("DELETED", obj) },
	})
	require.NoError(t, err)
	// Strict replays to the informer's watch what changed since its list,
	// one event per object: so that the log holds every event written from
	// here on, as these tests expect, the watch must have started.
	reconciletest.StartInformers(t, factory)
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(kube.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == "deployments"
		})
	}, 10*time.Second, time.Millisecond, "the informer watches")
	return log
}

func TestStrictDeletionThroughAnInformer(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	log := watchDeployments(t, e.kube)
	d := deployment("web")
	d.Finalizers = []string{"x"}
	_, err := e.deployments().Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.deployments().Delete(ctx, "web", metav1.DeleteOptions{}))
	require.NoError(t, e.deployments().Delete(ctx, "web", metav1.DeleteOptions{}))
	_, err = e.deployments().Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	want := []string{
		"ADDED web deleting=false finalizers=[x]",
		"MODIFIED web deleting=true finalizers=[x]",
		"DELETED web deleting=true finalizers=[x]",
	}
	assert.Eventually(t, func() bool { return len(log.get()) >= len(want) }, 10*time.Second, time.Millisecond)
	assert.Equal(t, want, log.get(), "the second delete sends nothing; the removal sends the last stored state")
}

func TestStrictGarbageCollection(t *testing.T) {
	ctx := context.Background()
	type objects struct {
		foo *samplev1alpha1.Foo
		web *appsv1.Deployment
		rs  *appsv1.ReplicaSet
		e   *strictEnv
	}
	// setUp creates Foo a owning Deployment web owning ReplicaSet web-1,
	// with what mod changes on web before it is created.
	setUp := func(t *testing.T, mod func(t *testing.T, o *objects, web *appsv1.Deployment)) *objects {
		o := &objects{e: newStrictEnv()}
		o.foo = createFoo(ctx, t, o.e, "a")
		web := deployment("web")
		web.OwnerReferences = []metav1.OwnerReference{ownerRef(o.foo, fooKind, true)}
		if mod != nil {
			mod(t, o, web)
		}
		var err error
		o.web, err = o.e.deployments().Create(ctx, web, metav1.CreateOptions{})
		require.NoError(t, err)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1",
			OwnerReferences: []metav1.OwnerReference{ownerRef(o.web, deploymentKind, true)}}}
		o.rs, err = o.e.kube.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		require.NoError(t, err)
		return o
	}
	exists := func(t *testing.T, o *objects, gvr string) bool {
		t.Helper()
		var err error
		switch gvr {
		case "foo":
			_, err = o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
		case "web":
			_, err = o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
		case "rs":
			_, err = o.e.kube.AppsV1().ReplicaSets(ns).Get(ctx, "web-1", metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	deleteFoo := func(t *testing.T, o *objects, opts metav1.DeleteOptions) {
		t.Helper()
		require.NoError(t, o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "a", opts))
	}
	tests := []struct {
		name string
		mod  func(t *testing.T, o *objects, web *appsv1.Deployment)
		run  func(t *testing.T, o *objects)
	}{{
		name: "a Foo's Deployment, in another clientset, and its ReplicaSet go with it",
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{})
			assert.False(t, exists(t, o, "foo"))
			assert.False(t, exists(t, o, "web"))
			assert.False(t, exists(t, o, "rs"))
		},
	}, {
		name: "a dependent with another owner loses the reference only",
		mod: func(t *testing.T, o *objects, web *appsv1.Deployment) {
			b := createFoo(ctx, t, o.e, "b")
			web.OwnerReferences = append(web.OwnerReferences, ownerRef(b, fooKind, false))
		},
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{})
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.Len(t, web.OwnerReferences, 1)
			assert.Equal(t, "b", web.OwnerReferences[0].Name)
			assert.NotEqual(t, o.web.ResourceVersion, web.ResourceVersion)
			assert.True(t, exists(t, o, "rs"))
		},
	}, {
		name: "an owner of a kind never requested counts as present",
		mod: func(_ *testing.T, _ *objects, web *appsv1.Deployment) {
			web.OwnerReferences = append(web.OwnerReferences, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "uid-w"})
		},
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{})
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.Len(t, web.OwnerReferences, 1)
			assert.Equal(t, "Widget", web.OwnerReferences[0].Kind)
		},
	}, {
		name: "a dependent's finalizers are honoured, and its own dependents wait for it",
		mod:  func(_ *testing.T, _ *objects, web *appsv1.Deployment) { web.Finalizers = []string{"hold"} },
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{})
			assert.False(t, exists(t, o, "foo"))
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.NotNil(t, web.DeletionTimestamp)
			assert.True(t, exists(t, o, "rs"))
			web.Finalizers = nil
			_, err = o.e.deployments().Update(ctx, web, metav1.UpdateOptions{})
			require.NoError(t, err)
			assert.False(t, exists(t, o, "web"))
			assert.False(t, exists(t, o, "rs"))
		},
	}, {
		name: "an owner whose finalizer is removed collects its dependents then",
		run: func(t *testing.T, o *objects) {
			f := o.foo.DeepCopy()
			f.Finalizers = []string{"x"}
			f, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
			require.NoError(t, err)
			deleteFoo(t, o, metav1.DeleteOptions{})
			assert.True(t, exists(t, o, "web"), "its owner is still there")
			_, err = o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			assert.False(t, exists(t, o, "foo"))
			assert.False(t, exists(t, o, "web"))
			assert.False(t, exists(t, o, "rs"))
		},
	}, {
		name: "Orphan leaves the dependents without the reference",
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
			assert.False(t, exists(t, o, "foo"))
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Empty(t, web.OwnerReferences)
			assert.True(t, exists(t, o, "rs"))
		},
	}, {
		name: "Orphan with another finalizer keeps that one",
		run: func(t *testing.T, o *objects) {
			_, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"finalizers":["x"]}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
			f, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, []string{"x"}, f.Finalizers)
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Empty(t, web.OwnerReferences)
		},
	}, {
		name: "Foreground keeps the owner until a blocking dependent is gone",
		mod:  func(_ *testing.T, _ *objects, web *appsv1.Deployment) { web.Finalizers = []string{"hold"} },
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			f, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, []string{metav1.FinalizerDeleteDependents}, f.Finalizers)
			assert.NotNil(t, f.DeletionTimestamp)
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.NotNil(t, web.DeletionTimestamp)
			assert.Equal(t, []string{"hold"}, web.Finalizers, "a blocking dependent with dependents went in the foreground too, and finished when its ReplicaSet went")
			assert.False(t, exists(t, o, "rs"))
			_, err = o.e.deployments().Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`), metav1.PatchOptions{})
			require.NoError(t, err)
			assert.False(t, exists(t, o, "web"))
			assert.False(t, exists(t, o, "foo"))
		},
	}, {
		name: "Foreground with no blocking dependent removes the owner at once",
		mod: func(t *testing.T, o *objects, web *appsv1.Deployment) {
			web.OwnerReferences = []metav1.OwnerReference{ownerRef(o.foo, fooKind, false)}
		},
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			assert.False(t, exists(t, o, "foo"))
			assert.False(t, exists(t, o, "web"))
		},
	}, {
		name: "Foreground with a dependent that has another owner drops its reference",
		mod: func(t *testing.T, o *objects, web *appsv1.Deployment) {
			b := createFoo(ctx, t, o.e, "b")
			web.OwnerReferences = append(web.OwnerReferences, ownerRef(b, fooKind, false))
		},
		run: func(t *testing.T, o *objects) {
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			assert.False(t, exists(t, o, "foo"))
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.Len(t, web.OwnerReferences, 1)
			assert.Equal(t, "b", web.OwnerReferences[0].Name)
		},
	}, {
		name: "an explicit Background drops a pending orphan finalizer",
		run: func(t *testing.T, o *objects) {
			_, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"finalizers":["x","orphan"]}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			deleteFoo(t, o, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			f, err := o.e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, []string{"x"}, f.Finalizers)
			web, err := o.e.deployments().Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Len(t, web.OwnerReferences, 1, "not orphaned")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, setUp(t, tt.mod))
		})
	}
}

func TestStrictGarbageCollectionScope(t *testing.T) {
	ctx := context.Background()
	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}
	// Objects given to the constructor count once their kind is requested.
	seeded := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "seeded", ResourceVersion: "1"}}
	kube := kubefake.NewClientset(seeded)
	reconciletest.Strict(kube)
	role, err := kube.RbacV1().ClusterRoles().Create(ctx, owner, metav1.CreateOptions{})
	require.NoError(t, err)
	ref := ownerRef(role, "rbac.authorization.k8s.io/v1/ClusterRole", false)
	for _, n := range []string{"a", "b"} {
		_, err := kube.CoreV1().ConfigMaps(n).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	seeded.OwnerReferences = []metav1.OwnerReference{ref}
	_, err = kube.CoreV1().ConfigMaps("a").Update(ctx, seeded, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.NoError(t, kube.RbacV1().ClusterRoles().Delete(ctx, "owner", metav1.DeleteOptions{}))
	list, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "a cluster-scoped owner's dependents in every namespace")

	// A kind no request was served for is not looked at.
	unseen := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "uid-o"}}}})
	api := reconciletest.Strict(unseen)
	require.NoError(t, api.Tracker(unseen).Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "o", UID: "uid-o"}}))
	require.NoError(t, unseen.CoreV1().ConfigMaps("a").Delete(ctx, "o", metav1.DeleteOptions{}))
	_, err = unseen.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), "a", "s")
	assert.NoError(t, err, "Secrets were never requested")
}

func TestStrictApply(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	reconciletest.Strict(kube)
	cms := kube.CoreV1().ConfigMaps("ns")
	applied, err := cms.Apply(ctx, corev1apply.ConfigMap("a", "ns").WithData(map[string]string{"k": "1"}), metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, "1001", applied.ResourceVersion)
	assert.NotEmpty(t, applied.UID)
	applied, err = cms.Apply(ctx, corev1apply.ConfigMap("a", "ns").WithData(map[string]string{"k": "2"}), metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, "1002", applied.ResourceVersion)
	assert.Equal(t, "2", applied.Data["k"])

	deployments := kube.AppsV1().Deployments(ns)
	web := appsv1apply.Deployment("web", ns).WithFinalizers("x").
		WithSpec(appsv1apply.DeploymentSpec().WithReplicas(1)).
		WithStatus(appsv1apply.DeploymentStatus().WithReplicas(3))
	d, err := deployments.Apply(ctx, web, metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation)
	assert.Zero(t, d.Status.Replicas, "a create drops the status")
	d, err = deployments.Apply(ctx, web.WithSpec(appsv1apply.DeploymentSpec().WithReplicas(2)), metav1.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Generation)
	assert.Zero(t, d.Status.Replicas, "an apply of the main resource keeps the status")

	d, err = deployments.ApplyStatus(ctx, appsv1apply.Deployment("web", ns).WithStatus(appsv1apply.DeploymentStatus().WithReplicas(4)), metav1.ApplyOptions{FieldManager: "test-status"})
	require.NoError(t, err)
	assert.Equal(t, int32(4), d.Status.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas)

	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	_, err = deployments.Apply(ctx, web.WithFinalizers("y"), metav1.ApplyOptions{FieldManager: "test", Force: true})
	require.True(t, apierrors.IsInvalid(err), "a new finalizer while deleting: %v", err)
	d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, d.Finalizers, "the apply is undone")

	_, err = kube.Invokes(k8stesting.NewPatchSubresourceAction(deploymentsGVR, ns, "web", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`), "other"), nil)
	require.True(t, apierrors.IsBadRequest(err), "an apply of an unknown subresource: %v", err)
}

// TestStrictWatchAfterList writes between an informer's list and its
// watch, where client-go's fake tracker replays additions and changes but
// loses removals, and checks the informer ends with what is stored and its
// handler saw each change once.
func TestStrictWatchAfterList(t *testing.T) {
	tests := []struct {
		name string
		// between writes through the tracker after the list.
		between func(t *testing.T, tracker k8stesting.ObjectTracker)
		// want is the informer's cache afterwards, name to UID;
		// events what its handler saw after the list.
		want   map[string]types.UID
		events []string
	}{{
		name: "removed",
		between: func(t *testing.T, tracker k8stesting.ObjectTracker) {
			require.NoError(t, tracker.Delete(deploymentsGVR, ns, "old"))
		},
		want:   map[string]types.UID{"kept": "uid-kept"},
		events: []string{"DELETED old uid-old"},
	}, {
		name: "removed and created again",
		between: func(t *testing.T, tracker k8stesting.ObjectTracker) {
			require.NoError(t, tracker.Delete(deploymentsGVR, ns, "old"))
			require.NoError(t, tracker.Create(deploymentsGVR, deployment("old"), ns))
		},
		want:   map[string]types.UID{"kept": "uid-kept", "old": "new"},
		events: []string{"DELETED old uid-old", "ADDED old new"},
	}, {
		name: "changed",
		between: func(t *testing.T, tracker k8stesting.ObjectTracker) {
			obj, err := tracker.Get(deploymentsGVR, ns, "old")
			require.NoError(t, err)
			d := obj.(*appsv1.Deployment)
			d.Spec.Replicas = ptr.To[int32](3)
			require.NoError(t, tracker.Update(deploymentsGVR, d, ns))
		},
		want:   map[string]types.UID{"kept": "uid-kept", "old": "uid-old"},
		events: []string{"MODIFIED old uid-old replicas=3"},
	}, {
		name: "created",
		between: func(t *testing.T, tracker k8stesting.ObjectTracker) {
			require.NoError(t, tracker.Create(deploymentsGVR, deployment("new"), ns))
		},
		want:   map[string]types.UID{"kept": "uid-kept", "old": "uid-old", "new": "new"},
		events: []string{"ADDED new new"},
	}, {
		name: "created and removed",
		between: func(t *testing.T, tracker k8stesting.ObjectTracker) {
			require.NoError(t, tracker.Create(deploymentsGVR, deployment("brief"), ns))
			require.NoError(t, tracker.Delete(deploymentsGVR, ns, "brief"))
		},
		want: map[string]types.UID{"kept": "uid-kept", "old": "uid-old"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seeded := func(name string) runtime.Object {
				d := deployment(name)
				d.UID, d.ResourceVersion = types.UID("uid-"+name), "1"
				return d
			}
			kube := kubefake.NewClientset(seeded("kept"), seeded("old"))
			api := reconciletest.Strict(kube)
			var once sync.Once
			kube.PrependWatchReactor("deployments", func(k8stesting.Action) (bool, watch.Interface, error) {
				once.Do(func() { tt.between(t, api.Tracker(kube)) })
				return false, nil, nil
			})

			// uid names the UID the Strict fake gave an object "new".
			uid := func(d *appsv1.Deployment) types.UID {
				if strings.HasPrefix(string(d.UID), "uid-") {
					return d.UID
				}
				return "new"
			}
			var mu sync.Mutex
			var events []string
			record := func(verb string, obj any) {
				d := obj.(*appsv1.Deployment)
				if verb == "ADDED" && uid(d) != "new" {
					return // the list
				}
				event := fmt.Sprintf("%s %s %s", verb, d.Name, uid(d))
				if verb == "MODIFIED" {
					event += fmt.Sprintf(" replicas=%d", *d.Spec.Replicas)
				}
				mu.Lock()
				defer mu.Unlock()
				events = append(events, event)
			}
			factory := kubeinformers.NewSharedInformerFactory(kube, 0)
			informer := factory.Apps().V1().Deployments().Informer()
			_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { record("ADDED", obj) },
				UpdateFunc: func(_, obj any) { record("MODIFIED", obj) },
				DeleteFunc: func(obj any) { record("DELETED", obj) },
			})
			require.NoError(t, err)
			reconciletest.StartInformers(t, factory)

			cached := func() map[string]types.UID {
				out := map[string]types.UID{}
				for _, obj := range informer.GetStore().List() {
					d := obj.(*appsv1.Deployment)
					out[d.Name] = uid(d)
				}
				return out
			}
			assert.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Equal(c, tt.want, cached())
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(c, tt.events, events)
			}, 10*time.Second, time.Millisecond, "the informer holds what is stored and saw each change once")
		})
	}
}

// TestStrictWatchFromAnEarlierList watches from a list that another list
// followed, as one of two informers of a resource does.
func TestStrictWatchFromAnEarlierList(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	createDeployment(ctx, t, e, "old")
	list := func() string {
		obj, err := e.kube.Invokes(k8stesting.NewListAction(deploymentsGVR, appsv1.SchemeGroupVersion.WithKind("Deployment"), ns, metav1.ListOptions{}), nil)
		require.NoError(t, err)
		return obj.(*appsv1.DeploymentList).ResourceVersion
	}
	first := list()
	createDeployment(ctx, t, e, "new")
	second := list()
	require.NotEqual(t, first, second)
	require.NoError(t, e.deployments().Delete(ctx, "old", metav1.DeleteOptions{}))

	events := func(since string) []string {
		w, err := e.kube.InvokesWatch(k8stesting.NewWatchAction(deploymentsGVR, ns, metav1.ListOptions{ResourceVersion: since}))
		require.NoError(t, err)
		defer w.Stop()
		var out []string
		for {
			select {
			case ev := <-w.ResultChan():
				out = append(out, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*appsv1.Deployment).Name))
			default:
				return out // the replay is sent before the watch is returned
			}
		}
	}
	assert.Equal(t, []string{"ADDED new", "DELETED old"}, events(first))
	assert.Equal(t, []string{"DELETED old"}, events(second))
}

func TestStrictTrackerFromAReactor(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	kubeTracker := e.api.Tracker(e.kube)
	// A reactor that writes while the clientset holds its lock: each
	// Deployment created gets a ConfigMap, written through the tracker,
	// and the create itself goes on to the strict reactor.
	e.kube.PrependReactor("create", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.CreateAction).GetObject().(*appsv1.Deployment)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-config"}}
		return false, nil, kubeTracker.Create(configMapsGVR, cm, d.Namespace)
	})
	// Another marks a Foo's status when its Deployment is deleted.
	fooTracker := e.api.Tracker(e.foos)
	e.kube.PrependReactor("delete", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := fooTracker.Get(foosGVR, ns, "a")
		if err != nil {
			return false, nil, err
		}
		f := obj.(*samplev1alpha1.Foo)
		f.Labels["deployment"] = "deleted"
		f.Status.AvailableReplicas = 9
		return false, nil, fooTracker.Update(foosGVR, f, ns)
	})

	createFoo(ctx, t, e, "a")
	d := createDeployment(ctx, t, e, "web")
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, cm.UID)
	cmVersion, err := strconv.Atoi(cm.ResourceVersion)
	require.NoError(t, err)
	dVersion, err := strconv.Atoi(d.ResourceVersion)
	require.NoError(t, err)
	assert.Less(t, cmVersion, dVersion, "written first, from the shared counter")

	require.NoError(t, e.deployments().Delete(ctx, "web", metav1.DeleteOptions{}))
	f, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "deleted", f.Labels["deployment"])
	assert.Zero(t, f.Status.AvailableReplicas, "an Update through the tracker keeps the status")
	_, err = e.deployments().Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

func TestStrictTracker(t *testing.T) {
	e := newStrictEnv()
	tr := e.api.Tracker(e.kube)

	w, err := tr.Watch(configMapsGVR, ns)
	require.NoError(t, err)
	defer w.Stop()
	require.NoError(t, tr.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seeded", ResourceVersion: "1"}}))
	require.NoError(t, tr.Create(configMapsGVR, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}, ns))
	obj, err := tr.Get(configMapsGVR, ns, "a")
	require.NoError(t, err)
	cm := obj.(*corev1.ConfigMap)
	assert.NotEmpty(t, cm.UID)
	assert.Equal(t, "1001", cm.ResourceVersion)

	cm.Data = map[string]string{"k": "1"}
	require.NoError(t, tr.Update(configMapsGVR, cm, ns))
	require.True(t, apierrors.IsConflict(tr.Update(configMapsGVR, cm, ns)), "stale")
	cm.ResourceVersion = ""
	cm.Data["k"] = "2"
	require.NoError(t, tr.Patch(configMapsGVR, cm, ns))
	cfg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "namespace": ns},
		"data":     map[string]any{"k": "3"},
	}}
	require.NoError(t, tr.Apply(configMapsGVR, cfg, ns, metav1.PatchOptions{FieldManager: "test", Force: ptr.To(true)}))
	list, err := tr.List(configMapsGVR, corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns)
	require.NoError(t, err)
	items, err := meta.ExtractList(list)
	require.NoError(t, err)
	assert.Len(t, items, 2)
	require.NoError(t, tr.Delete(configMapsGVR, ns, "a"))

	var got []string
	for len(got) < 6 {
		select {
		case ev := <-w.ResultChan():
			m, _ := meta.Accessor(ev.Object)
			got = append(got, fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion()))
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %v", got)
		}
	}
	// Apply stores the fake's apply, then the stamped result.
	assert.Equal(t, []string{"ADDED seeded 1", "ADDED a 1001", "MODIFIED a 1002", "MODIFIED a 1003", "MODIFIED a 1003", "MODIFIED a 1004"}, got)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Deleted, ev.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("no DELETED event")
	}

	assert.Panics(t, func() { e.api.Tracker(kubefake.NewClientset()) }, "a clientset not given to Strict")
}

func TestStrictConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	tr := e.api.Tracker(e.kube)
	const writers, writes = 4, 20
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("cm-%d", i)
			_, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			assert.NoError(t, err)
			for j := range writes {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"j": strconv.Itoa(j)}}
				if j%2 == 0 {
					_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				} else {
					err = tr.Update(configMapsGVR, cm, ns)
				}
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	list, err := e.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, cm := range list.Items {
		assert.False(t, seen[cm.ResourceVersion], "versions are unique")
		seen[cm.ResourceVersion] = true
	}
	assert.Len(t, seen, writers)
}

func TestStrictUnstructured(t *testing.T) {
	ctx := context.Background()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"})
	reconciletest.Strict(client)
	res := client.Resource(widgets).Namespace(ns)
	widget := func(spec, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec}}
		if status != nil {
			u.Object["status"] = status
		}
		u.SetName("w")
		return u
	}

	created, err := res.Create(ctx, widget(map[string]any{"size": int64(1)}, map[string]any{"ready": true}), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.GetGeneration())
	assert.NotContains(t, created.Object, "status", "a create drops the status")

	// The main resource cannot write a status, even where none is stored.
	u := created.DeepCopy()
	u.Object["status"] = map[string]any{"ready": true}
	u.Object["spec"] = map[string]any{"size": int64(2)}
	updated, err := res.Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotContains(t, updated.Object, "status")
	assert.Equal(t, int64(2), updated.GetGeneration())

	// The status subresource writes the status only.
	u = updated.DeepCopy()
	u.Object["status"] = map[string]any{"ready": true}
	u.Object["spec"] = map[string]any{"size": int64(9)}
	u.SetLabels(map[string]string{"x": "y"})
	updated, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": true}, updated.Object["status"])
	assert.Equal(t, map[string]any{"size": int64(2)}, updated.Object["spec"])
	assert.Empty(t, updated.GetLabels())
	assert.Equal(t, int64(2), updated.GetGeneration())

	// A status write without status removes it, as on an API server.
	u = updated.DeepCopy()
	delete(u.Object, "status")
	updated, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotContains(t, updated.Object, "status")

	// An Unstructured object is a custom resource: an update needs a
	// resourceVersion.
	u = updated.DeepCopy()
	u.SetResourceVersion("")
	_, err = res.Update(ctx, u, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, "metadata.resourceVersion")
}

func TestStrictUnconditionalUpdates(t *testing.T) {
	// invalid wants 422 Invalid naming metadata.resourceVersion.
	invalid := func(t *testing.T, err error) {
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.ErrorContains(t, err, "metadata.resourceVersion")
	}
	ok := func(t *testing.T, err error) { assert.NoError(t, err) }
	conflict := func(t *testing.T, err error) { assert.True(t, apierrors.IsConflict(err), "%v", err) }
	tests := []struct {
		name string
		// write writes an object created before, as the name says.
		write func(ctx context.Context, t *testing.T, e *strictEnv) error
		want  func(t *testing.T, err error)
	}{
		{"a Lease's update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			l := createLease(ctx, t, e, "a")
			l.ResourceVersion = ""
			l.Spec.HolderIdentity = ptr.To("b")
			_, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}, invalid},
		{"a Lease's update without resourceVersion through Tracker", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			l := createLease(ctx, t, e, "a")
			l.ResourceVersion = ""
			l.Spec.HolderIdentity = ptr.To("b")
			return e.api.Tracker(e.kube).Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), l, ns)
		}, invalid},
		{"a Lease's update with its resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			l := createLease(ctx, t, e, "a")
			l.Spec.HolderIdentity = ptr.To("b")
			_, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}, ok},
		{"a Lease's update with a stale resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			l := createLease(ctx, t, e, "a")
			l.ResourceVersion = "1"
			_, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}, conflict},
		{"a Lease's update with another uid and without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			l := createLease(ctx, t, e, "a")
			l.ResourceVersion = ""
			l.UID = "another-uid"
			_, err := e.kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}, conflict}, // the uid precondition is checked first
		{"a Lease's patch, which needs none", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			createLease(ctx, t, e, "a")
			_, err := e.kube.CoordinationV1().Leases(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"b"}}`), metav1.PatchOptions{})
			return err
		}, ok},
		{"a PodDisruptionBudget's update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			p, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, podDisruptionBudget("a"), metav1.CreateOptions{})
			require.NoError(t, err)
			p.ResourceVersion = ""
			p.Spec.MinAvailable = ptr.To(intstr.FromInt32(2))
			_, err = e.kube.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		}, invalid},
		{"a PodDisruptionBudget's status update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			p, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, podDisruptionBudget("a"), metav1.CreateOptions{})
			require.NoError(t, err)
			p.ResourceVersion = ""
			p.Status.CurrentHealthy = 1
			_, err = e.kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		}, invalid},
		{"a ConfigMap's update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			cm, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			cm.ResourceVersion = ""
			cm.Data = map[string]string{"k": "v"}
			_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}, ok},
		{"a Deployment's update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			d := createDeployment(ctx, t, e, "web")
			d.ResourceVersion = ""
			d.Spec.Replicas = ptr.To[int32](2)
			_, err := e.deployments().Update(ctx, d, metav1.UpdateOptions{})
			return err
		}, ok},
		{"a Deployment's status update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			d := createDeployment(ctx, t, e, "web")
			d.ResourceVersion = ""
			d.Status.Replicas = 1
			_, err := e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}, ok},
		{"a Foo's update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			f := createFoo(ctx, t, e, "a")
			f.ResourceVersion = ""
			f.Spec.Replicas = ptr.To[int32](2)
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
			return err
		}, invalid},
		{"a Foo's status update without resourceVersion", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			f := createFoo(ctx, t, e, "a")
			f.ResourceVersion = ""
			f.Status.AvailableReplicas = 1
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).UpdateStatus(ctx, f, metav1.UpdateOptions{})
			return err
		}, invalid},
		{"a Foo's patch, which needs none", func(ctx context.Context, t *testing.T, e *strictEnv) error {
			createFoo(ctx, t, e, "a")
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
			return err
		}, ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want(t, tt.write(context.Background(), t, newStrictEnv()))
		})
	}
}

func TestStrictPatchErrors(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	f := createFoo(ctx, t, e, "a")
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		want  func(error) bool
	}{
		{"a JSON patch test that fails", types.JSONPatchType, `[{"op":"test","path":"/metadata/uid","value":"other"}]`, apierrors.IsInvalid},
		{"a JSON patch path that does not exist", types.JSONPatchType, `[{"op":"remove","path":"/metadata/finalizers/3"}]`, apierrors.IsInvalid},
		{"a JSON patch that is no list", types.JSONPatchType, `{"op":"remove"}`, apierrors.IsBadRequest},
		{"a merge patch that is no JSON", types.MergePatchType, `{`, apierrors.IsBadRequest},
		{"a patch of a missing object", types.MergePatchType, `{}`, apierrors.IsNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := f.Name
			if tt.want(apierrors.NewNotFound(schema.GroupResource{}, "")) {
				name = "missing"
			}
			_, err := e.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, name, tt.pt, []byte(tt.patch), metav1.PatchOptions{})
			assert.True(t, tt.want(err), "%v", err)
		})
	}
}

func TestStrictBuiltinStatusWrites(t *testing.T) {
	ctx := context.Background()
	e := newStrictEnv()
	owner := createFoo(ctx, t, e, "a")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, fooKind, false)}}}
	pod, err := e.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), pod.Generation)

	// A Pod's status write keeps its spec and ownerReferences, and may
	// change other metadata.
	pod.OwnerReferences = nil
	pod.Labels = map[string]string{"x": "y"}
	pod.Spec.NodeName = "node"
	pod.Status.Phase = corev1.PodRunning
	pod, err = e.kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, map[string]string{"x": "y"}, pod.Labels)
	assert.Empty(t, pod.Spec.NodeName)
	assert.Equal(t, corev1.PodRunning, pod.Status.Phase)

	// A Deployment's status write may add a finalizer, and remove the
	// last one of a Deployment being deleted.
	d := createDeployment(ctx, t, e, "web")
	d.Finalizers = []string{"x"}
	d, err = e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.deployments().Delete(ctx, "web", metav1.DeleteOptions{}))
	d, err = e.deployments().Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	d.Finalizers = nil
	_, err = e.deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = e.deployments().Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestStrictSeededObjects gives the constructors objects without a
// resourceVersion, as tests usually write them, and checks they are served
// with versions from the counter, updated like created objects, and that
// no watcher sees the versions arrive as a change.
func TestStrictSeededObjects(t *testing.T) {
	ctx := context.Background()
	cm := func(namespace, name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
	}
	kube := kubefake.NewClientset(newLease("lease"), cm("a", "x", ""), cm("b", "y", ""), cm("b", "given", "7"))
	foos := foofake.NewClientset(newFoo("foo"))
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"size": int64(1)}}}
	widget.SetNamespace(ns)
	widget.SetName("w")
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget)
	api := reconciletest.Strict(kube, foos, dynamic)
	version := func(t *testing.T, rv string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(rv, 10, 64)
		require.NoError(t, err, "resourceVersion %q", rv)
		require.Greater(t, v, int64(1000), "a version of the counter")
		return v
	}
	next := func(t *testing.T, w watch.Interface) watch.Event {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return watch.Event{}
		}
	}
	noEvent := func(t *testing.T, w watch.Interface) {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			m, _ := meta.Accessor(ev.Object)
			t.Fatalf("unexpected %s of %s at %s", ev.Type, m.GetName(), m.GetResourceVersion())
		default:
		}
	}

	t.Run("a custom resource watched first", func(t *testing.T) {
		w, err := foos.SamplecontrollerV1alpha1().Foos(ns).Watch(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		defer w.Stop()
		ev := next(t, w)
		require.Equal(t, watch.Added, ev.Type)
		added := version(t, ev.Object.(*samplev1alpha1.Foo).ResourceVersion)

		got, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "foo", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, added, version(t, got.ResourceVersion), "the version the watch saw")
		noEvent(t, w)
		got.Spec.Replicas = ptr.To[int32](2)
		updated, err := foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err, "an update of what was read")
		assert.Greater(t, version(t, updated.ResourceVersion), added)
		ev = next(t, w)
		assert.Equal(t, watch.Modified, ev.Type)
		assert.Equal(t, updated.ResourceVersion, ev.Object.(*samplev1alpha1.Foo).ResourceVersion)
		noEvent(t, w)
	})

	t.Run("unstructured, watched first", func(t *testing.T) {
		res := dynamic.Resource(widgets).Namespace(ns)
		w, err := res.Watch(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		defer w.Stop()
		ev := next(t, w)
		require.Equal(t, watch.Added, ev.Type)
		added := version(t, ev.Object.(*unstructured.Unstructured).GetResourceVersion())
		got, err := res.Get(ctx, "w", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, added, version(t, got.GetResourceVersion()))
		got.Object["spec"] = map[string]any{"size": int64(2)}
		_, err = res.Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err, "an update of what was read")
		assert.Equal(t, watch.Modified, next(t, w).Type)
		noEvent(t, w)
	})

	t.Run("added through the tracker, watched through it first", func(t *testing.T) {
		secrets := corev1.SchemeGroupVersion.WithResource("secrets")
		tracker := api.Tracker(kube)
		w, err := tracker.Watch(secrets, ns)
		require.NoError(t, err)
		defer w.Stop()
		require.NoError(t, tracker.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}}))
		ev := next(t, w)
		require.Equal(t, watch.Added, ev.Type)
		added := version(t, ev.Object.(*corev1.Secret).ResourceVersion)
		got, err := kube.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, added, version(t, got.ResourceVersion))
		noEvent(t, w)
	})

	t.Run("a conditional built-in kind", func(t *testing.T) {
		leases := kube.CoordinationV1().Leases(ns)
		got, err := leases.Get(ctx, "lease", metav1.GetOptions{})
		require.NoError(t, err)
		before := version(t, got.ResourceVersion)
		assert.Empty(t, got.ManagedFields, "the version is all a stamp writes")
		got.Spec.HolderIdentity = ptr.To("me")
		updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err, "an update of what was read")
		assert.Greater(t, version(t, updated.ResourceVersion), before)
		_, err = leases.Update(ctx, got, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsConflict(err), "the read copy is stale now: %v", err)
	})

	t.Run("listed by an informer", func(t *testing.T) {
		factory := kubeinformers.NewSharedInformerFactory(kube, 0)
		informer := factory.Core().V1().ConfigMaps().Informer()
		var mu sync.Mutex
		var changes []string
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) {
				mu.Lock()
				defer mu.Unlock()
				changes = append(changes, obj.(*corev1.ConfigMap).Name)
			},
		})
		require.NoError(t, err)
		reconciletest.StartInformers(t, factory)
		versions := map[string]string{}
		for _, obj := range informer.GetStore().List() {
			c := obj.(*corev1.ConfigMap)
			versions[c.Name] = c.ResourceVersion
		}
		require.Len(t, versions, 3)
		assert.Equal(t, "7", versions["given"], "a version given is kept")
		assert.NotEqual(t, version(t, versions["x"]), version(t, versions["y"]), "each object has its own")

		cached, err := factory.Core().V1().ConfigMaps().Lister().ConfigMaps("a").Get("x")
		require.NoError(t, err)
		fresh := cached.DeepCopy()
		fresh.Data = map[string]string{"k": "v"}
		updated, err := kube.CoreV1().ConfigMaps("a").Update(ctx, fresh, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Equal(changes, []string{"x"})
		}, 10*time.Second, time.Millisecond, "the informer sees the update, and nothing else, as a change")
		_, err = kube.CoreV1().ConfigMaps("a").Update(ctx, cached, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsConflict(err), "the cached copy is stale now: %v", err)
		assert.Greater(t, version(t, updated.ResourceVersion), version(t, cached.ResourceVersion))
	})
}
