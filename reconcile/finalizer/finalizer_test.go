package finalizer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/finalizer"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

const name = "example.com/cleanup"

var key = cache.ObjectName{Namespace: "ns", Name: "entry"}

// env is a strict fake clientset and a cache the test fills by hand, with a
// finalizing reconciler whose Apply and Cleanup record their calls.
type env struct {
	kube    *fake.Clientset
	cache   cache.Indexer
	objects *write.Objects[*corev1.ConfigMap]
	r       reconcile.Reconciler[cache.ObjectName]

	applied, cleaned []*corev1.ConfigMap
	cleanup          func() (reconcile.Result, error)
}

func newEnv(t *testing.T, finalizers ...string) *env {
	t.Helper()
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Core().V1().ConfigMaps().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	e := &env{kube: kube, cache: inf.GetIndexer(), objects: write.New(inf)}
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{}, nil }
	e.r = finalizer.Reconciler(name, e.objects, kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
		Apply: func(_ context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			e.applied = append(e.applied, cm)
			return reconcile.Result{RequeueAfter: time.Minute}, nil
		},
		Cleanup: func(_ context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			e.cleaned = append(e.cleaned, cm)
			return e.cleanup()
		},
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Finalizers: finalizers}}
	cm, err := e.client().Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
	e.sync(t)
	return e
}

func (e *env) client() typedcorev1.ConfigMapInterface {
	return e.kube.CoreV1().ConfigMaps(key.Namespace)
}

// sync makes the cache show what the API server has, as an informer would.
func (e *env) sync(t *testing.T) {
	t.Helper()
	cm, err := e.client().Get(context.Background(), key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		old, found, _ := e.cache.GetByKey(key.String())
		if found {
			require.NoError(t, e.cache.Delete(old))
		}
		return
	}
	require.NoError(t, err)
	require.NoError(t, e.cache.Update(cm))
}

func (e *env) run(t *testing.T) reconciletest.Outcome {
	t.Helper()
	return reconciletest.Run(t, e.r, key, &e.kube.Fake)
}

func (e *env) server(t *testing.T) (*corev1.ConfigMap, error) {
	t.Helper()
	return e.client().Get(context.Background(), key.Name, metav1.GetOptions{})
}

func TestReconcilerLifecycle(t *testing.T) {
	e := newEnv(t, "other.io/keep")

	// First reconcile: the finalizer is added before Apply runs, after the
	// other controller's.
	out := e.run(t)
	require.NoError(t, out.Err)
	assert.Equal(t, reconcile.Result{RequeueAfter: time.Minute}, out.Result, "Apply's result")
	assert.Equal(t, []string{"patch v1/configmaps ns/entry"}, reconciletest.Describe(out.Writes))
	require.Len(t, e.applied, 1)
	assert.Equal(t, []string{"other.io/keep", name}, e.applied[0].Finalizers, "Apply sees the finalizer")

	// The cache has not seen the patch: the next reconcile waits quietly.
	out = e.run(t)
	require.ErrorIs(t, out.Err, reconcile.ErrStaleCache)
	assert.Empty(t, out.Writes)
	assert.Len(t, e.applied, 1)

	e.sync(t)
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes, "the finalizer is in place: nothing to write")
	assert.Len(t, e.applied, 2)

	// Deleted: the object stays while the finalizer is held.
	require.NoError(t, e.client().Delete(context.Background(), key.Name, metav1.DeleteOptions{}))
	e.sync(t)

	// A failing cleanup keeps the finalizer and is retried.
	boom := errors.New("external service down")
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{}, boom }
	out = e.run(t)
	require.ErrorIs(t, out.Err, boom)
	assert.Empty(t, out.Writes)
	// A cleanup in progress keeps it too.
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Second}, nil }
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Equal(t, reconcile.Result{RequeueAfter: time.Second}, out.Result)
	assert.Empty(t, out.Writes)
	_, err := e.server(t)
	require.NoError(t, err, "still there while cleaning up")

	// Cleanup done: the finalizer goes; the other controller's stays.
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{}, nil }
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"patch v1/configmaps ns/entry"}, reconciletest.Describe(out.Writes))
	assert.Len(t, e.cleaned, 3)
	assert.Len(t, e.applied, 2, "Apply never runs on an object being deleted")
	cm, err := e.server(t)
	require.NoError(t, err)
	assert.Equal(t, []string{"other.io/keep"}, cm.Finalizers)

	// Once the cache shows the finalizer gone, nothing more happens.
	e.sync(t)
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes)
	assert.Len(t, e.cleaned, 3)
}

func TestReconcilerLastFinalizerDeletes(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.run(t).Err)
	e.sync(t)
	require.NoError(t, e.client().Delete(context.Background(), key.Name, metav1.DeleteOptions{}))
	e.sync(t)
	out := e.run(t)
	require.NoError(t, out.Err)
	require.Len(t, e.cleaned, 1)
	_, err := e.server(t)
	assert.True(t, apierrors.IsNotFound(err), "the last finalizer removed, the API server deletes it: %v", err)

	// Gone from the cache too: nothing is called.
	e.sync(t)
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes)
	assert.Len(t, e.cleaned, 1)
}

func TestReconcilerObjectGoneMidway(t *testing.T) {
	e := newEnv(t)
	// The cache still shows the object, which is gone from the server.
	require.NoError(t, e.client().Delete(context.Background(), key.Name, metav1.DeleteOptions{}))
	out := e.run(t)
	require.NoError(t, out.Err, "a vanished object is done")
	assert.Empty(t, e.applied)
}

func TestReconcilerNotOurs(t *testing.T) {
	e := newEnv(t, "other.io/keep")
	require.NoError(t, e.client().Delete(context.Background(), key.Name, metav1.DeleteOptions{}))
	e.sync(t)
	out := e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes)
	assert.Empty(t, e.cleaned, "no cleanup without our finalizer")
	assert.Empty(t, e.applied)
}

func TestEnsureAndRemove(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a.io/first")
	cm, _, err := e.objects.Get(key)
	require.NoError(t, err)
	assert.False(t, finalizer.Contains(cm, name))

	added, err := finalizer.Ensure(ctx, e.objects, e.client(), cm, name)
	require.NoError(t, err)
	assert.True(t, finalizer.Contains(added, name))
	again, err := finalizer.Ensure(ctx, e.objects, e.client(), added, name)
	require.NoError(t, err)
	assert.Same(t, added, again, "nothing sent when present")

	// Another controller adds a finalizer after ours: removing ours leaves it.
	theirs := added.DeepCopy()
	theirs.Finalizers = append(theirs.Finalizers, "z.io/last")
	theirs, err = e.client().Update(ctx, theirs, metav1.UpdateOptions{})
	require.NoError(t, err)
	// From the copy the API answered our patch with: it predates their change.
	removed, err := finalizer.Remove(ctx, e.objects, e.client(), added, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.io/first", "z.io/last"}, removed.Finalizers)
	same, err := finalizer.Remove(ctx, e.objects, e.client(), removed, name)
	require.NoError(t, err)
	assert.Same(t, removed, same, "nothing sent when absent")
	_ = theirs
}

func TestPatchGuards(t *testing.T) {
	ctx := context.Background()
	t.Run("an entry before ours moved", func(t *testing.T) {
		e := newEnv(t, "a.io/first", name)
		cm, _, err := e.objects.Get(key)
		require.NoError(t, err)
		moved := cm.DeepCopy()
		moved.Finalizers = []string{name}
		_, err = e.client().Update(ctx, moved, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = finalizer.Remove(ctx, e.objects, e.client(), cm, name)
		require.ErrorIs(t, err, reconcile.ErrStaleCache)
	})
	t.Run("another incarnation", func(t *testing.T) {
		e := newEnv(t)
		cm, _, err := e.objects.Get(key)
		require.NoError(t, err)
		require.NoError(t, e.client().Delete(ctx, key.Name, metav1.DeleteOptions{}))
		_, err = e.client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = finalizer.Ensure(ctx, e.objects, e.client(), cm, name)
		require.ErrorIs(t, err, reconcile.ErrStaleCache)
		now, err := e.server(t)
		require.NoError(t, err)
		assert.Empty(t, now.Finalizers, "the new incarnation is left alone")
	})
	t.Run("no finalizer on an object being deleted", func(t *testing.T) {
		e := newEnv(t, "a.io/first")
		require.NoError(t, e.client().Delete(ctx, key.Name, metav1.DeleteOptions{}))
		e.sync(t)
		cm, _, err := e.objects.Get(key)
		require.NoError(t, err)
		e.kube.ClearActions()
		_, err = finalizer.Ensure(ctx, e.objects, e.client(), cm, name)
		require.Error(t, err)
		assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake))
	})
}

// A finalizer name the API server would refuse is refused before any
// request, loudly.
func TestInvalidName(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	cm, _, err := e.objects.Get(key)
	require.NoError(t, err)
	e.kube.ClearActions()
	for _, bad := range []string{"Example.com/Cleanup", "example.com/", "has space"} {
		_, err = finalizer.Ensure(ctx, e.objects, e.client(), cm, bad)
		require.Error(t, err, bad)
		assert.NotErrorIs(t, err, reconcile.ErrStaleCache)
		assert.ErrorContains(t, err, bad)
		assert.Panics(t, func() {
			finalizer.Reconciler(bad, e.objects, e.kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
				Apply:   func(context.Context, *corev1.ConfigMap) (reconcile.Result, error) { return reconcile.Result{}, nil },
				Cleanup: func(context.Context, *corev1.ConfigMap) (reconcile.Result, error) { return reconcile.Result{}, nil },
			})
		})
	}
	assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake))
	assert.NoError(t, finalizer.Validate(name))
}

// A patch refused for what it is (an admission policy) is the API server's
// error, not a quiet requeue: Apply never runs, and the user is told.
func TestRefusedPatchIsLoud(t *testing.T) {
	e := newEnv(t)
	e.kube.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), key.Name,
			field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"), "denied by policy")})
	})
	out := e.run(t)
	require.Error(t, out.Err)
	assert.NotErrorIs(t, out.Err, reconcile.ErrStaleCache)
	assert.True(t, apierrors.IsInvalid(out.Err), "%v", out.Err)
	assert.Empty(t, e.applied)
}

// A cache that has not seen the finalizer added (another process's, or a
// restarted one's) never makes it add the finalizer a second time.
func TestNoDuplicateFromALaggingCache(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "other.io/keep")
	before, _, err := e.objects.Get(key)
	require.NoError(t, err)
	_, err = finalizer.Ensure(ctx, e.objects, e.client(), before, name)
	require.NoError(t, err)

	// A second writer whose cache still shows the object before the patch.
	inf := informers.NewSharedInformerFactory(e.kube, 0).Core().V1().ConfigMaps().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace([]any{before}, before.ResourceVersion))
	lagging := write.New(inf)
	_, err = finalizer.Ensure(ctx, lagging, e.client(), before, name)
	require.ErrorIs(t, err, reconcile.ErrStaleCache)
	now, err := e.server(t)
	require.NoError(t, err)
	assert.Equal(t, []string{"other.io/keep", name}, now.Finalizers)
}

// Remove takes every copy of the name, and only those.
func TestRemoveEveryCopy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, name, "other.io/keep", name)
	cm, _, err := e.objects.Get(key)
	require.NoError(t, err)
	removed, err := finalizer.Remove(ctx, e.objects, e.client(), cm, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"other.io/keep"}, removed.Finalizers)
	now, err := e.server(t)
	require.NoError(t, err)
	assert.Equal(t, []string{"other.io/keep"}, now.Finalizers)
}

// optIn is the annotation that puts a ConfigMap in the scope of the scoped
// reconciler: its value names the external entry the ConfigMap mirrors.
const optIn = "example.com/mirror-as"

// A scoped reconciler with a kept value: only ConfigMaps that opt in get the
// finalizer and, in the same patch, the name of their external entry; one
// that opts out, or changes the name it asks for, is cleaned up with the
// name that was kept, and released like a deleted one.
func TestReconcilerScopeAndKeptValue(t *testing.T) {
	e := newEnv(t)
	var cleanedNames []string
	e.r = finalizer.Reconciler(name, e.objects, e.kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
		InScope:   func(cm *corev1.ConfigMap) bool { return cm.Annotations[optIn] != "" },
		KeepValue: func(cm *corev1.ConfigMap) string { return cm.Annotations[optIn] },
		Apply: func(_ context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			e.applied = append(e.applied, cm)
			return reconcile.Result{}, nil
		},
		Cleanup: func(_ context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			kept, ok := finalizer.Kept(cm, name)
			require.True(t, ok, "Cleanup finds the kept name")
			cleanedNames = append(cleanedNames, kept)
			return e.cleanup()
		},
	})
	annotate := func(value string) {
		t.Helper()
		cm, err := e.server(t)
		require.NoError(t, err)
		if value == "" {
			delete(cm.Annotations, optIn)
		} else {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[optIn] = value
		}
		_, err = e.client().Update(context.Background(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		e.sync(t)
	}

	// Out of scope: nothing is called, nothing is written.
	out := e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes)
	assert.Empty(t, e.applied)
	assert.Empty(t, cleanedNames)

	// In scope: one patch adds the finalizer and keeps the name.
	annotate("entry-a")
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"patch v1/configmaps ns/entry"}, reconciletest.Describe(out.Writes))
	require.Len(t, e.applied, 1)
	assert.Equal(t, []string{name}, e.applied[0].Finalizers)
	kept, ok := finalizer.Kept(e.applied[0], name)
	assert.True(t, ok)
	assert.Equal(t, "entry-a", kept)
	e.sync(t)
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes, "in place: nothing to write")

	// The opt-in annotation now names another entry: the kept name stays
	// what Cleanup will need, until Apply keeps the new one.
	annotate("entry-b")
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes)
	kept, _ = finalizer.Kept(e.applied[len(e.applied)-1], name)
	assert.Equal(t, "entry-a", kept)
	cm, err := e.server(t)
	require.NoError(t, err)
	_, err = finalizer.Keep(context.Background(), e.objects, e.client(), cm, name, "entry-b")
	require.NoError(t, err)
	e.sync(t)

	// Leaving the scope: Cleanup sees the kept name; while it fails the
	// finalizer stays; then finalizer and kept name go in one patch.
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{}, errors.New("store down") }
	annotate("")
	out = e.run(t)
	require.Error(t, out.Err)
	assert.Empty(t, out.Writes)
	e.cleanup = func() (reconcile.Result, error) { return reconcile.Result{}, nil }
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"patch v1/configmaps ns/entry"}, reconciletest.Describe(out.Writes))
	assert.Equal(t, []string{"entry-b", "entry-b"}, cleanedNames)
	e.sync(t)
	cm, err = e.server(t)
	require.NoError(t, err, "released, not deleted")
	assert.Empty(t, cm.Finalizers)
	assert.NotContains(t, cm.Annotations, name, "the kept name is gone with the finalizer")
	out = e.run(t)
	require.NoError(t, out.Err)
	assert.Empty(t, out.Writes, "out of scope and released: left alone")

	// Back in scope, then deleted: cleaned up with the name kept then.
	annotate("entry-c")
	require.NoError(t, e.run(t).Err)
	e.sync(t)
	require.NoError(t, e.client().Delete(context.Background(), key.Name, metav1.DeleteOptions{}))
	e.sync(t)
	require.NoError(t, e.run(t).Err)
	assert.Equal(t, "entry-c", cleanedNames[len(cleanedNames)-1])
	_, err = e.server(t)
	assert.True(t, apierrors.IsNotFound(err), "deleted once released: %v", err)
}

// Keep sends one guarded patch: it fails, instead of overwriting, when the
// kept value changed since the object was read, and adds the annotations
// map where there was none.
func TestKeepGuards(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cm, err := e.server(t)
	require.NoError(t, err)
	require.Nil(t, cm.Annotations)
	kept, err := finalizer.Keep(ctx, e.objects, e.client(), cm, name, "first")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{name: "first"}, kept.Annotations)
	assert.Equal(t, []string{name}, kept.Finalizers)

	again, err := finalizer.Keep(ctx, e.objects, e.client(), kept, name, "first")
	require.NoError(t, err)
	assert.Same(t, kept, again, "nothing to send")

	_, err = finalizer.Keep(ctx, e.objects, e.client(), cm, name, "second") // cm as read before the first Keep
	require.Error(t, err, "the guard refuses a write over a value it did not read")
	got, err := e.server(t)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Annotations[name])

	_, err = finalizer.Keep(ctx, e.objects, e.client(), kept, "not a name", "x")
	require.Error(t, err)
}

// TestReconcilerClusterScoped finalizes Namespaces, a kind whose typed
// client takes no namespace, through the strict fakes and an informer.
func TestReconcilerClusterScoped(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().Namespaces().TypedInformer()
	objects := write.New(inf)
	var applied, cleaned []string
	r := finalizer.Reconciler(name, objects, finalizer.ClusterScoped(kube.CoreV1().Namespaces()), finalizer.Funcs[*corev1.Namespace]{
		Apply: func(_ context.Context, ns *corev1.Namespace) (reconcile.Result, error) {
			applied = append(applied, ns.Name)
			return reconcile.Result{}, nil
		},
		Cleanup: func(_ context.Context, ns *corev1.Namespace) (reconcile.Result, error) {
			cleaned = append(cleaned, ns.Name)
			return reconcile.Result{}, nil
		},
	})
	reconciletest.StartInformers(t, factory)
	key := cache.ObjectName{Name: "team"}
	cached := func(ok func(*corev1.Namespace) bool) func() bool {
		return func() bool {
			ns, found, err := objects.Get(key)
			return err == nil && found && ok(ns)
		}
	}

	out := reconciletest.Run(t, r, key, &kube.Fake)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"patch v1/namespaces /team"}, reconciletest.Describe(out.Writes), "the finalizer")
	assert.Equal(t, []string{"team"}, applied)
	require.Eventually(t, cached(func(ns *corev1.Namespace) bool { return finalizer.Contains(ns, name) }), 10*time.Second, time.Millisecond)

	require.NoError(t, kube.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}))
	require.Eventually(t, cached(func(ns *corev1.Namespace) bool { return ns.DeletionTimestamp != nil }), 10*time.Second, time.Millisecond)
	out = reconciletest.Run(t, r, key, &kube.Fake)
	require.NoError(t, out.Err)
	assert.Equal(t, []string{"patch v1/namespaces /team"}, reconciletest.Describe(out.Writes), "the finalizer's removal")
	assert.Equal(t, []string{"team"}, cleaned)
	_, err := kube.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "released, the Namespace is gone: %v", err)
}
