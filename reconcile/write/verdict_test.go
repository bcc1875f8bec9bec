package write_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// requireLoud asserts that err is a real error, not a quiet requeue.
func requireLoud(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.NotErrorIs(t, err, reconcile.ErrStaleCache, "a real error, not a quiet requeue: %v", err)
}

// passStore makes the informer's store apply an event of another object,
// at a version later than every write so far: the cache is past them.
func (e *env) passStore(t *testing.T) {
	t.Helper()
	other, err := e.client().Create(reconciletest.Context(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "other-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, other)
}

// changedBehindTheCache creates the object, lets the cache see it, and
// changes it again without the cache seeing that.
func (e *env) changedBehindTheCache(t *testing.T) {
	t.Helper()
	ctx := reconciletest.Context(t)
	cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	cm = cm.DeepCopy()
	cm.Labels = map[string]string{"changed": "by someone"}
	_, err = e.client().Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// Each answer that may mean "the cache is behind" is quiet while the cache
// has not seen the object as the API server has it, and the real error
// once it has.
func TestAnswersJudged(t *testing.T) {
	ctx := reconciletest.Context(t)
	tests := []struct {
		name string
		// setup brings the server ahead of the cache; write is the write
		// that meets the answer; catchUp brings the cache past what the
		// server had then, without showing the object when show is false.
		setup   func(t *testing.T, e *env)
		write   func(t *testing.T, e *env) error
		catchUp func(t *testing.T, e *env)
		is      func(error) bool
	}{
		{
			name: "AlreadyExists of an object the informer does not show",
			setup: func(t *testing.T, e *env) {
				_, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			write: func(t *testing.T, e *env) error {
				_, _, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
				return err
			},
			catchUp: func(t *testing.T, e *env) { e.passStore(t) },
			is:      apierrors.IsAlreadyExists,
		},
		{
			name:  "409 Conflict of an update built on an old copy",
			setup: func(t *testing.T, e *env) { e.changedBehindTheCache(t) },
			write: func(t *testing.T, e *env) error {
				_, _, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
				return err
			},
			catchUp: func(t *testing.T, e *env) { e.passStore(t) },
			is:      apierrors.IsConflict,
		},
		{
			name: "NotFound of an update of an object deleted since",
			setup: func(t *testing.T, e *env) {
				cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
				require.NoError(t, err)
				e.deliver(t, cm)
				require.NoError(t, e.client().Delete(ctx, cm.Name, metav1.DeleteOptions{}))
			},
			write: func(t *testing.T, e *env) error {
				cm, found, err := e.objects.Get(key)
				if err != nil || !found {
					return err // gone: nothing to update
				}
				_, _, err = e.objects.Update(ctx, e.client(), cm, setMode("a"))
				return err
			},
			// An informer that watched the object shows its deletion.
			catchUp: func(t *testing.T, e *env) { require.NoError(t, e.cache.Delete(settings())) },
			is:      apierrors.IsNotFound,
		},
		{
			name:  "422 of a patch whose test no longer holds",
			setup: func(t *testing.T, e *env) { e.changedBehindTheCache(t) },
			write: func(t *testing.T, e *env) error {
				cm, _, err := e.objects.Get(key)
				if err != nil {
					return err
				}
				_, err = e.objects.Patch(ctx, e.client(), cm, types.JSONPatchType,
					[]byte(`[{"op":"test","path":"/metadata/labels","value":null},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`))
				return err
			},
			catchUp: func(t *testing.T, e *env) { e.passStore(t) },
			is:      apierrors.IsInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(t, e)
			err := tt.write(t, e)
			requireStale(t, err)
			assert.True(t, tt.is(err), "the API error is kept: %v", err)
			// Until the cache catches up, the key stays quiet without a request.
			e.kube.ClearActions()
			_, _, err = e.objects.Get(key)
			requireStale(t, err)
			assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake))

			tt.catchUp(t, e)
			err = tt.write(t, e)
			if err == nil {
				return // the write built on what the cache shows now went through
			}
			requireLoud(t, err)
			assert.True(t, tt.is(err), "the API error: %v", err)
		})
	}
}

// An answer about the write itself, with the object on the server as the
// write found it, is never quiet: a 422 that a policy gives, a NotFound of
// a missing status subresource.
func TestAnswersAboutTheWrite(t *testing.T) {
	ctx := reconciletest.Context(t)
	tests := []struct {
		name   string
		verb   string
		sub    string
		answer error
		write  func(e *env, cm *corev1.ConfigMap) error
	}{
		{
			name: "a policy refuses a patch", verb: "patch",
			answer: apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), key.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "finalizers"), "x", "refused by policy")}),
			write: func(e *env, cm *corev1.ConfigMap) error {
				_, err := e.objects.Patch(ctx, e.client(), cm, types.MergePatchType, []byte(`{"metadata":{"finalizers":["x"]}}`))
				return err
			},
		},
		{
			name: "no status subresource", verb: "update", sub: "status",
			answer: apierrors.NewNotFound(corev1.Resource("configmaps/status"), key.Name),
			write: func(e *env, cm *corev1.ConfigMap) error {
				_, _, err := e.objects.UpdateStatus(ctx, configMapStatus{e.client(), e.kube}, cm, setMode("a"))
				return err
			},
		},
		{
			name: "a policy refuses an update", verb: "update",
			answer: apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), key.Name, nil),
			write: func(e *env, cm *corev1.ConfigMap) error {
				_, _, err := e.objects.Update(ctx, e.client(), cm, setMode("a"))
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
			require.NoError(t, err)
			e.deliver(t, cm)
			e.kube.PrependReactor(tt.verb, "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return a.GetSubresource() == tt.sub, nil, tt.answer
			})
			err = tt.write(e, cm)
			requireLoud(t, err)
			assert.Equal(t, apierrors.ReasonForError(tt.answer), apierrors.ReasonForError(err))
			_, _, err = e.objects.Get(key)
			assert.NoError(t, err, "nothing is waited for")
		})
	}
}

// configMapStatus sends UpdateStatus of ConfigMaps, which have no status
// subresource, to the fake's reactors.
type configMapStatus struct {
	write.Client[*corev1.ConfigMap]
	kube *fake.Clientset
}

func (c configMapStatus) UpdateStatus(_ context.Context, cm *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	got, err := c.kube.Invokes(k8stesting.NewUpdateSubresourceAction(corev1.SchemeGroupVersion.WithResource("configmaps"), "status", cm.Namespace, cm), &corev1.ConfigMap{})
	if err != nil {
		return nil, err
	}
	return got.(*corev1.ConfigMap), nil
}

// A version that the cache does not show within the stale limit turns the
// wait into a real error, which keeps the answer that started it.
func TestStaleLimit(t *testing.T) {
	ctx := reconciletest.Context(t)
	clock := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, write.WithClock(clock), write.WithStaleLimit(30*time.Second))
	_, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)

	_, _, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	requireStale(t, err)
	clock.Step(30 * time.Second)
	_, _, err = e.objects.Get(key)
	requireStale(t, err) // at the limit: still quiet

	clock.Step(time.Second)
	_, _, err = e.objects.Get(key)
	requireLoud(t, err)
	assert.True(t, apierrors.IsAlreadyExists(err), "the answer that started the wait: %v", err)
	assert.Contains(t, err.Error(), "may not watch it")
	_, _, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	requireLoud(t, err)

	// The controller's own write that the cache never shows: the same.
	e2 := newEnv(t, write.WithClock(clock), write.WithStaleLimit(30*time.Second))
	_, _, err = e2.objects.Ensure(ctx, e2.client(), settings(), setMode("a"))
	require.NoError(t, err)
	clock.Step(31 * time.Second)
	_, _, err = e2.objects.Get(key)
	requireLoud(t, err)
	assert.Contains(t, err.Error(), "has not shown resourceVersion")

	// Once the cache shows it, the wait is over.
	server, err := e2.client().Get(ctx, key.Name, metav1.GetOptions{})
	require.NoError(t, err)
	e2.deliver(t, server)
	_, found, err := e2.objects.Get(key)
	require.NoError(t, err)
	assert.True(t, found)
}

// A create that meets an object the cache does not show asks mutate about
// it: a refusal is mutate's error at once, not a wait for the cache.
func TestEnsureRefusesWhatTheCacheDoesNotShow(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	theirs := settings()
	theirs.Labels = map[string]string{"owner": "someone else"}
	_, err := e.client().Create(ctx, theirs, metav1.CreateOptions{})
	require.NoError(t, err)
	foreign := errors.New("not ours")
	_, _, err = e.objects.Ensure(ctx, e.client(), settings(), func(cm *corev1.ConfigMap) error {
		if cm.Labels["owner"] != "" {
			return foreign
		}
		return setMode("a")(cm)
	})
	requireLoud(t, err)
	assert.ErrorIs(t, err, foreign)
	assert.Equal(t, "someone else", e.server(t).Labels["owner"], "nothing written")
}

// A write's answer given back to Update or Delete says nothing about the
// cache: the next Get still waits for the cache to show the write.
func TestAnswerIsNotTheCache(t *testing.T) {
	ctx := reconciletest.Context(t)
	t.Run("update that changes nothing", func(t *testing.T) {
		e := newEnv(t)
		created, _, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
		require.NoError(t, err)
		e.deliver(t, created)
		updated, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("b"))
		require.NoError(t, err)
		require.Equal(t, write.Updated, change)

		e.kube.ClearActions()
		_, change, err = e.objects.Update(ctx, e.client(), updated, setMode("b"))
		require.NoError(t, err)
		assert.Equal(t, write.Unchanged, change)
		assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake))
		_, _, err = e.objects.Get(key)
		requireStale(t, err) // the cache still holds mode a
	})
	t.Run("delete of an answer being deleted", func(t *testing.T) {
		e := newEnv(t)
		cm := settings()
		cm.Finalizers = []string{"example.com/keep"}
		cm, err := e.client().Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
		e.deliver(t, cm)
		require.NoError(t, e.objects.Delete(ctx, e.client(), cm))
		answer := e.server(t)
		require.NotNil(t, answer.DeletionTimestamp)

		require.NoError(t, e.objects.Delete(ctx, e.client(), answer))
		_, _, err = e.objects.Get(key)
		requireStale(t, err) // the cache still shows the object not being deleted
	})
}

// A delete is seen once the cache shows the object being deleted or gone,
// not when it shows a change made between the caller's read and the delete.
func TestDeleteSeenOnlyAsDeleted(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	cm := settings()
	cm.Finalizers = []string{"example.com/keep"}
	cm, err := e.client().Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	relabelled := cm.DeepCopy()
	relabelled.Labels = map[string]string{"changed": "by someone"}
	relabelled, err = e.client().Update(ctx, relabelled, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.NoError(t, e.objects.Delete(ctx, e.client(), cm))
	e.deliver(t, relabelled) // the change before the delete, not the delete
	_, _, err = e.objects.Get(key)
	requireStale(t, err)
	e.deliver(t, e.server(t))
	got, _, err := e.objects.Get(key)
	require.NoError(t, err)
	assert.NotNil(t, got.DeletionTimestamp)
}

// An update that the API server answers at the version it had (a webhook
// or defaulting undid the change) wrote nothing.
func TestUpdateUndoneByTheServer(t *testing.T) {
	ctx := reconciletest.Context(t)
	e := newEnv(t)
	cm, err := e.client().Create(ctx, settings(), metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	e.kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, cm.DeepCopy(), nil // as stored: the change normalised away
	})
	got, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion)
	_, _, err = e.objects.Get(key)
	assert.NoError(t, err, "nothing to wait for")
}

// A status set by Ensure's mutate is left out by a kind with a status
// subresource: an error, instead of an update reported every reconcile.
func TestEnsureStatusLeftOut(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Apps().V1().Deployments().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	client := kube.AppsV1().Deployments("ns")
	d, err := client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(d))

	_, _, err = objects.Ensure(ctx, client, d, func(d *appsv1.Deployment) error {
		d.Spec.Replicas = ptr.To[int32](3)
		d.Status.Replicas = 3
		return nil
	})
	requireLoud(t, err)
	assert.Contains(t, err.Error(), "UpdateStatus")

	// Without a status change, the same update is fine.
	d2, err := client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(d2))
	_, change, err := objects.Ensure(ctx, client, d2, func(d *appsv1.Deployment) error {
		d.Spec.Replicas = ptr.To[int32](3)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
}
