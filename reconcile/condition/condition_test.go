package condition_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/condition"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// PodDisruptionBudgets stand for any kind whose status has conditions and
// an observedGeneration.
func conditionsOf(p *policyv1.PodDisruptionBudget) *[]metav1.Condition { return &p.Status.Conditions }
func observedOf(p *policyv1.PodDisruptionBudget) *int64                { return &p.Status.ObservedGeneration }

func ready(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: msg}
}

// events returns the events recorded so far.
func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestSet(t *testing.T) {
	ctx := reconciletest.Context(t)
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Policy().V1().PodDisruptionBudgets().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	objects := write.New(inf)
	rec := record.NewFakeRecorder(10)
	w := condition.New(objects, rec, conditionsOf, condition.WithObservedGeneration(observedOf))
	client := kube.PolicyV1().PodDisruptionBudgets("ns")
	pdb, err := client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(pdb))
	deliver := func(p *policyv1.PodDisruptionBudget) { require.NoError(t, inf.GetIndexer().Update(p)) }

	// An outage: the condition, the observed generations and one Warning.
	kube.ClearActions()
	down, err := w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, "StoreUnavailable", "store down"), corev1.EventTypeWarning)
	require.NoError(t, err)
	c := w.Get(down, "Ready")
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, pdb.Generation, c.ObservedGeneration)
	assert.False(t, c.LastTransitionTime.IsZero())
	assert.Equal(t, pdb.Generation, down.Status.ObservedGeneration)
	assert.Equal(t, []string{"Warning StoreUnavailable store down"}, events(rec))
	assert.Len(t, reconciletest.WriteActions(&kube.Fake), 1)
	assert.True(t, w.Current(down, ready(metav1.ConditionFalse, "StoreUnavailable", "")))

	// Until the cache shows that write, Set waits quietly.
	_, err = w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, "StoreUnavailable", "store down"), corev1.EventTypeWarning)
	require.ErrorIs(t, err, reconcile.ErrStaleCache)
	deliver(down)

	// Retries of the same outage: no write, no event.
	kube.ClearActions()
	same, err := w.Set(ctx, client, down, ready(metav1.ConditionFalse, "StoreUnavailable", "store down"), corev1.EventTypeWarning)
	require.NoError(t, err)
	assert.Same(t, down, same)
	assert.Empty(t, reconciletest.WriteActions(&kube.Fake))
	assert.Empty(t, events(rec))

	// Its message changes: written, but the same transition, so no event,
	// and the transition time stays.
	msg, err := w.Set(ctx, client, down, ready(metav1.ConditionFalse, "StoreUnavailable", "store still down"), corev1.EventTypeWarning)
	require.NoError(t, err)
	assert.Equal(t, "store still down", w.Get(msg, "Ready").Message)
	assert.Equal(t, c.LastTransitionTime, w.Get(msg, "Ready").LastTransitionTime)
	assert.Empty(t, events(rec))
	deliver(msg)

	// Another reason of the same status is a transition of its own.
	other, err := w.Set(ctx, client, msg, ready(metav1.ConditionFalse, "BucketExists", "taken"), corev1.EventTypeWarning)
	require.NoError(t, err)
	assert.Equal(t, []string{"Warning BucketExists taken"}, events(rec))
	deliver(other)

	// Back to normal, without an event asked for.
	up, err := w.Set(ctx, client, other, ready(metav1.ConditionTrue, "Synced", "ok"), "")
	require.NoError(t, err)
	assert.Equal(t, metav1.ConditionTrue, w.Get(up, "Ready").Status)
	assert.Empty(t, events(rec))
	deliver(up)

	// A new generation: observedGeneration follows it, even when the
	// condition says the same.
	spec := up.DeepCopy()
	spec.Spec.MinAvailable = nil
	maxUnavailable := intOrString(1)
	spec.Spec.MaxUnavailable = &maxUnavailable
	spec, err = client.Update(ctx, spec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Greater(t, spec.Generation, up.Generation)
	deliver(spec)
	assert.False(t, w.Current(spec, ready(metav1.ConditionTrue, "Synced", "")), "observed at an older generation")
	observed, err := w.Set(ctx, client, spec, ready(metav1.ConditionTrue, "Synced", "ok"), corev1.EventTypeNormal)
	require.NoError(t, err)
	assert.Equal(t, spec.Generation, w.Get(observed, "Ready").ObservedGeneration)
	assert.Equal(t, spec.Generation, observed.Status.ObservedGeneration)
	assert.Empty(t, events(rec), "the same status and reason: no transition")
}

// The event of a transition is recorded once, before the status write: the
// retries of a write that fails do not record it again, and a transition
// to another reason, or back, does.
func TestSetEventOncePerTransitionWhileWritesFail(t *testing.T) {
	ctx, cancel := context.WithTimeout(reconciletest.Context(t), time.Minute)
	defer cancel()
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	inf := informers.NewSharedInformerFactory(kube, 0).Policy().V1().PodDisruptionBudgets().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	rec := record.NewFakeRecorder(10)
	w := condition.New(write.New(inf), rec, conditionsOf)
	client := kube.PolicyV1().PodDisruptionBudgets("ns")
	pdb, err := client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(pdb))
	// Every status write fails, as with an API server in trouble.
	kube.PrependReactor("update", "poddisruptionbudgets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return action.GetSubresource() == "status", nil, apierrors.NewInternalError(errors.New("etcd unavailable"))
	})

	for range 3 {
		_, err := w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, "Broken", "x"), corev1.EventTypeWarning)
		require.Error(t, err)
	}
	assert.Equal(t, []string{"Warning Broken x"}, events(rec), "once, however often the write is retried")

	_, err = w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, "Other", "y"), corev1.EventTypeWarning)
	require.Error(t, err)
	_, err = w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, "Broken", "x"), corev1.EventTypeWarning)
	require.Error(t, err)
	assert.Equal(t, []string{"Warning Other y", "Warning Broken x"}, events(rec), "each transition has its event")
}

func intOrString(i int) intstr.IntOrString { return intstr.FromInt32(int32(i)) }

// With the test's clock, the times of conditions and of objects are the
// times of that clock: a transition is stamped when the clock says, a Set
// that changes no status keeps the time, and the object the strict fake
// created carries the same clock's time.
func TestSetStampsTheClocksTime(t *testing.T) {
	ctx := reconciletest.Context(t)
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	kube := fake.NewClientset()
	reconciletest.Strict(kube).WithClock(clk)
	inf := informers.NewSharedInformerFactory(kube, 0).Policy().V1().PodDisruptionBudgets().TypedInformer()
	require.NoError(t, inf.GetIndexer().Replace(nil, "1"))
	w := condition.New(write.New(inf), nil, conditionsOf, condition.WithClock[*policyv1.PodDisruptionBudget](clk))
	client := kube.PolicyV1().PodDisruptionBudgets("ns")
	pdb, err := client.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, inf.GetIndexer().Add(pdb))
	assert.Equal(t, start, pdb.CreationTimestamp.Time.UTC())

	set := func(status metav1.ConditionStatus, reason string) *policyv1.PodDisruptionBudget {
		t.Helper()
		updated, err := w.Set(ctx, client, pdb, ready(status, reason, ""), "")
		require.NoError(t, err)
		require.NoError(t, inf.GetIndexer().Update(updated))
		pdb = updated
		return updated
	}
	clk.Step(time.Minute)
	assert.Equal(t, start.Add(time.Minute), w.Get(set(metav1.ConditionFalse, "Starting"), "Ready").LastTransitionTime.Time.UTC())
	clk.Step(time.Minute)
	assert.Equal(t, start.Add(time.Minute), w.Get(set(metav1.ConditionFalse, "StillStarting"), "Ready").LastTransitionTime.Time.UTC(),
		"a new reason with the same status is no transition")
	clk.Step(time.Minute)
	assert.Equal(t, start.Add(3*time.Minute), w.Get(set(metav1.ConditionTrue, "Running"), "Ready").LastTransitionTime.Time.UTC())

	explicit := metav1.NewTime(start.Add(-time.Hour))
	updated, err := w.Set(ctx, client, pdb, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Lost", LastTransitionTime: explicit}, "")
	require.NoError(t, err)
	assert.Equal(t, explicit.Time, w.Get(updated, "Ready").LastTransitionTime.Time, "a time the caller gives is kept")

	assert.PanicsWithValue(t, "condition.New: WithClock of a nil clock", func() {
		condition.New(write.New(inf), nil, conditionsOf, condition.WithClock[*policyv1.PodDisruptionBudget](nil))
	})
}
