package write_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// env is a strict fake clientset and an informer cache that the test fills
// by hand, so that it lags behind the writes exactly as the test says.
type env struct {
	kube    *fake.Clientset
	cache   cache.Indexer
	objects *write.Objects[*corev1.ConfigMap]
}

func newEnv(t *testing.T, opts ...write.Option) *env {
	t.Helper()
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	// The factory is never started: the test is the informer.
	inf := informers.NewSharedInformerFactory(kube, 0).Core().V1().ConfigMaps().TypedInformer()
	// The initial list, at a version before every write.
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	return &env{kube: kube, cache: inf.GetIndexer(), objects: write.New(inf, opts...)}
}

func (e *env) client() write.Client[*corev1.ConfigMap] { return e.kube.CoreV1().ConfigMaps("ns") }

// deliver puts obj into the cache, as the informer does with a watch event.
func (e *env) deliver(t *testing.T, obj *corev1.ConfigMap) {
	t.Helper()
	require.NoError(t, e.cache.Update(obj))
}

// server returns the API server's copy of the object.
func (e *env) server(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps("ns").Get(reconciletest.Context(t), key.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm
}

var key = cache.ObjectName{Namespace: "ns", Name: "settings"}

func settings() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// setMode owns data["mode"] and nothing else.
func setMode(mode string) func(cm *corev1.ConfigMap) error {
	return func(cm *corev1.ConfigMap) error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["mode"] = mode
		return nil
	}
}

func requireStale(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, reconcile.ErrStaleCache)
}

func TestEnsure(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)

	created, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Created, change)
	assert.Equal(t, map[string]string{"mode": "a"}, created.Data)

	// The cache has not seen the create: reading or writing it again is stale.
	_, _, err = e.objects.Get(key)
	requireStale(t, err)
	_, _, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	requireStale(t, err)

	e.deliver(t, created)
	got, found, err := e.objects.Get(key)
	require.NoError(t, err)
	require.True(t, found)
	assert.Same(t, created, got, "the cache's object is returned")

	// Someone else adds a key: the controller's part is unchanged, so
	// nothing is sent.
	other := created.DeepCopy()
	other.Data["extra"] = "theirs"
	theirs, err := e.client().Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.deliver(t, theirs)
	e.kube.ClearActions()
	got, change, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Same(t, theirs, got)
	assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake), "no request when nothing differs")

	// A change of the controller's part updates only that part.
	updated, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("b"))
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, map[string]string{"mode": "b", "extra": "theirs"}, updated.Data)
	_, _, err = e.objects.Get(key)
	requireStale(t, err)

	// A cache that moved past the write by another object's event has seen it.
	later := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}}
	later, err = e.client().Create(ctx, later, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, later)
	got, _, err = e.objects.Get(key)
	require.NoError(t, err, "the store applied an event after the write")
	assert.Same(t, theirs, got, "the cache still holds what it holds")
}

func TestEnsureRefusals(t *testing.T) {
	ctx := reconciletest.Context(t)
	foreign := errors.New("not ours")
	tests := []struct {
		name    string
		mutate  func(cm *corev1.ConfigMap) error
		wantErr error
	}{
		{name: "mutate refuses", mutate: func(*corev1.ConfigMap) error { return foreign }, wantErr: foreign},
		{name: "mutate renames", mutate: func(cm *corev1.ConfigMap) error { cm.Name = "other"; return nil }},
	}
	for _, tt := range tests {
		for _, exists := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exists=%v", tt.name, exists), func(t *testing.T) {
				e := newEnv(t)
				if exists {
					cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
					require.NoError(t, err)
					e.deliver(t, cm)
				}
				e.kube.ClearActions()
				_, _, err := e.objects.Ensure(ctx, e.client(), settings(), tt.mutate)
				require.Error(t, err)
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
				}
				assert.NotErrorIs(t, err, reconcile.ErrStaleCache)
				assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake), "nothing is written")
			})
		}
	}
}

func TestUpdateStatusAndPatch(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Core().V1().Namespaces().TypedInformer()
	objects := write.New(inf)
	nss := kube.CoreV1().Namespaces()
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Replace([]any{ns}, "1"))
	name := cache.ObjectName{Name: "team"}

	kube.ClearActions()
	same, change, err := objects.UpdateStatus(ctx, nss, ns, func(*corev1.Namespace) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Same(t, ns, same)
	assert.Empty(t, reconciletest.WriteActions(&kube.Fake))

	active, change, err := objects.UpdateStatus(ctx, nss, ns, func(ns *corev1.Namespace) error {
		ns.Status.Phase = corev1.NamespaceActive
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, []string{"update v1/namespaces/status /team"}, reconciletest.Describe(reconciletest.WriteActions(&kube.Fake)))

	// The cache's copy is older than the write: writes from it are stale,
	// writes from the write's answer are not.
	_, _, err = objects.Update(ctx, nss, ns, func(ns *corev1.Namespace) error { ns.Labels = map[string]string{"a": "b"}; return nil })
	requireStale(t, err)
	_, err = objects.Patch(ctx, nss, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))
	requireStale(t, err)
	patched, err := objects.Patch(ctx, nss, active, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))
	require.NoError(t, err)
	assert.Equal(t, "b", patched.Labels["a"])
	_, _, err = objects.Get(name)
	requireStale(t, err)
	require.NoError(t, inf.GetIndexer().Update(patched))
	_, _, err = objects.Get(name)
	require.NoError(t, err)

	relabelled, change, err := objects.Update(ctx, nss, patched, func(ns *corev1.Namespace) error { ns.Labels["a"] = "c"; return nil })
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, "c", relabelled.Labels["a"])
	assert.Equal(t, corev1.NamespaceActive, relabelled.Status.Phase)
}

func TestDelete(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)

	require.NoError(t, e.objects.Delete(ctx, e.client(), cm))
	_, err = e.kube.CoreV1().ConfigMaps("ns").Get(ctx, key.Name, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "deleted: %v", err)

	// The cache still shows the object: it has not seen the delete.
	_, _, err = e.objects.Get(key)
	requireStale(t, err)
	_, _, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	requireStale(t, err) // no create on top of a cache that still shows the object

	require.NoError(t, e.cache.Delete(cm))
	_, found, err := e.objects.Get(key)
	require.NoError(t, err)
	assert.False(t, found)

	// Deleting again: gone counts as deleted, and an object already being
	// deleted gets no request.
	require.NoError(t, e.objects.Delete(ctx, e.client(), cm))
	going := cm.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{}
	e.kube.ClearActions()
	require.NoError(t, e.objects.Delete(ctx, e.client(), going))
	assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake))
}

func TestDeleteOnlyThatIncarnation(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	old, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.client().Delete(ctx, old.Name, metav1.DeleteOptions{}))
	recreated, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEqual(t, old.UID, recreated.UID)

	// The cache still shows the old incarnation.
	e.deliver(t, old)
	err = e.objects.Delete(ctx, e.client(), old)
	requireStale(t, err)
	assert.True(t, apierrors.IsConflict(err), "the UID precondition failed: %v", err)
	_, err = e.kube.CoreV1().ConfigMaps("ns").Get(ctx, key.Name, metav1.GetOptions{})
	require.NoError(t, err, "the new incarnation is left alone")
}

func TestForget(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	_, _, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	_, _, err = e.objects.Get(key)
	requireStale(t, err)
	e.objects.Forget(key)
	_, found, err := e.objects.Get(key)
	require.NoError(t, err)
	assert.False(t, found)
}

// A patch that takes the last finalizer off an object being deleted
// deletes it; the API server answers with the object at the version it had
// before. The cache is stale until it no longer shows the object.
func TestWriteThatDeletes(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	cm, err := e.client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Finalizers: []string{"x.io/f"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, e.client().Delete(ctx, key.Name, metav1.DeleteOptions{}))
	cm, err = e.kube.CoreV1().ConfigMaps("ns").Get(ctx, key.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, cm.DeletionTimestamp)
	e.deliver(t, cm)
	// Answer as kube-apiserver does: the last state, at the same version.
	answer := cm.DeepCopy()
	answer.Finalizers = nil
	e.kube.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, answer, nil
	})

	_, err = e.objects.Patch(ctx, e.client(), cm, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))
	require.NoError(t, err)
	_, _, err = e.objects.Get(key)
	requireStale(t, err) // the cache still shows the object being deleted
	require.NoError(t, e.cache.Delete(cm))
	_, found, err := e.objects.Get(key)
	require.NoError(t, err)
	assert.False(t, found)
}

// TestEnsureOnServerWithoutVersions: a fake clientset gives objects no
// resourceVersion, so nothing shows whether the cache is behind; a create
// that meets an object the cache does not show yet (made by an earlier
// reconcile of the key) is quiet until the cache shows it, and then
// updated.
func TestEnsureOnServerWithoutVersions(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(kube, 0).Core().V1().ConfigMaps().TypedInformer()
	objects := write.New(inf)
	client := kube.CoreV1().ConfigMaps("ns")
	made, err := client.Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Empty(t, made.ResourceVersion, "the fake gives no versions")

	_, _, err = objects.Ensure(ctx, client, settings(), setMode("a"))
	requireStale(t, err)

	// Bounded: a cache that never shows the object makes it loud after
	// the stale limit.
	clock := testingclock.NewFakeClock(time.Now())
	bounded := write.New(inf, write.WithClock(clock), write.WithStaleLimit(30*time.Second))
	_, _, err = bounded.Ensure(ctx, client, settings(), setMode("a"))
	requireStale(t, err)
	clock.Step(31 * time.Second)
	_, _, err = bounded.Ensure(ctx, client, settings(), setMode("a"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, reconcile.ErrStaleCache)
	assert.True(t, apierrors.IsAlreadyExists(err), "the answer that started the wait: %v", err)

	require.NoError(t, inf.GetIndexer().Add(made))
	got, change, err := objects.Ensure(ctx, client, settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.Equal(t, map[string]string{"mode": "a"}, got.Data)
}
