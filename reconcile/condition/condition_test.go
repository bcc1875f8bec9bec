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

// The event of a transition is recorded once, after the status write
// that shows it succeeded: a write that fails records none, its retry
// that succeeds records it, later retries do not, and a transition to
// another reason, or back, records its own.
func TestSetEventAfterTheWriteSucceeded(t *testing.T) {
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
	// Status writes fail while failing is set, as with an API server in
	// trouble; each write that goes through notes how many events were
	// recorded before it.
	failing := true
	var before []int
	kube.PrependReactor("update", "poddisruptionbudgets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		if failing {
			return true, nil, apierrors.NewInternalError(errors.New("etcd unavailable"))
		}
		before = append(before, len(rec.Events))
		return false, nil, nil
	})
	set := func(reason, msg string) {
		t.Helper()
		updated, err := w.Set(ctx, client, pdb, ready(metav1.ConditionFalse, reason, msg), corev1.EventTypeWarning)
		if failing {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.NoError(t, inf.GetIndexer().Update(updated))
		pdb = updated
	}

	for range 3 {
		set("Broken", "x")
	}
	assert.Empty(t, events(rec), "no event while the status does not show the transition")
	failing = false
	set("Broken", "x")
	assert.Equal(t, []string{"Warning Broken x"}, events(rec), "once the status shows it")
	assert.Equal(t, []int{0}, before, "recorded after the write")
	set("Broken", "x")
	assert.Empty(t, events(rec), "the status says it already")

	set("Other", "y")
	set("Broken", "x")
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

// Update writes conditions together with the rest of the status, in one
// status write, with the rules and events of Set.
func TestUpdate(t *testing.T) {
	ctx := reconciletest.Context(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	kube := fake.NewClientset(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 3}})
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Policy().V1().PodDisruptionBudgets().TypedInformer()
	rec := record.NewFakeRecorder(10)
	w := condition.New(write.New(inf), rec, conditionsOf, condition.WithObservedGeneration(observedOf), condition.WithClock[*policyv1.PodDisruptionBudget](clk))
	client := kube.PolicyV1().PodDisruptionBudgets("ns")
	reconciletest.StartInformers(t, factory)
	// Each status write notes how many events were recorded before it.
	var before []int
	kube.PrependReactor("update", "poddisruptionbudgets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			before = append(before, len(rec.Events))
		}
		return false, nil, nil
	})
	pdb, err := client.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	update := func(healthy int32, conds ...metav1.Condition) (*policyv1.PodDisruptionBudget, error) {
		t.Helper()
		kube.ClearActions()
		before = nil
		updated, err := w.Update(ctx, client, pdb, func(p *policyv1.PodDisruptionBudget, set condition.SetFunc) error {
			p.Status.CurrentHealthy = healthy
			for _, c := range conds {
				eventType := corev1.EventTypeNormal
				if c.Status == metav1.ConditionFalse {
					eventType = corev1.EventTypeWarning
				}
				set(c, eventType)
			}
			return nil
		})
		if err == nil && updated != pdb {
			require.NoError(t, inf.GetIndexer().Update(updated)) // as the informer will
			pdb = updated
		}
		return updated, err
	}
	degraded := metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AllHealthy", Message: "all members answer"}

	// Counts and two conditions: one write, then one event per transition.
	got, err := update(2, ready(metav1.ConditionFalse, "MembersUnreachable", "1 of 3 unreachable"), degraded)
	require.NoError(t, err)
	assert.Len(t, reconciletest.WriteActions(&kube.Fake), 1, "one status write")
	assert.Equal(t, []int{0}, before, "events after the write")
	assert.ElementsMatch(t, []string{"Warning MembersUnreachable 1 of 3 unreachable", "Warning AllHealthy all members answer"}, events(rec))
	assert.Equal(t, int32(2), got.Status.CurrentHealthy)
	assert.Equal(t, int64(3), got.Status.ObservedGeneration)
	for _, c := range []string{"Ready", "Degraded"} {
		require.NotNil(t, w.Get(got, c), c)
		assert.Equal(t, int64(3), w.Get(got, c).ObservedGeneration)
		assert.Equal(t, clk.Now(), w.Get(got, c).LastTransitionTime.Time.UTC())
	}

	// The same again: no write, no event.
	same, err := update(2, ready(metav1.ConditionFalse, "MembersUnreachable", "1 of 3 unreachable"), degraded)
	require.NoError(t, err)
	assert.Same(t, pdb, same)
	assert.Empty(t, reconciletest.WriteActions(&kube.Fake))
	assert.Empty(t, events(rec))

	// Another count, the same conditions: written, no event, times kept.
	clk.Step(time.Minute)
	got, err = update(1, ready(metav1.ConditionFalse, "MembersUnreachable", "2 of 3 unreachable"), degraded)
	require.NoError(t, err)
	assert.Len(t, reconciletest.WriteActions(&kube.Fake), 1)
	assert.Empty(t, events(rec))
	assert.Equal(t, clk.Now().Add(-time.Minute), w.Get(got, "Ready").LastTransitionTime.Time.UTC())
	assert.Equal(t, "2 of 3 unreachable", w.Get(got, "Ready").Message)

	// The rest of the status alone: the conditions stay as they are.
	got, err = update(3)
	require.NoError(t, err)
	assert.Equal(t, int32(3), got.Status.CurrentHealthy)
	assert.Len(t, got.Status.Conditions, 2)
	assert.Empty(t, events(rec))

	// A transition: its event, once.
	got, err = update(3, ready(metav1.ConditionTrue, "AllMembersReady", "3 of 3"))
	require.NoError(t, err)
	assert.Equal(t, []string{"Normal AllMembersReady 3 of 3"}, events(rec))
	assert.Equal(t, clk.Now(), w.Get(got, "Ready").LastTransitionTime.Time.UTC())

	// mutate's error: nothing written, no event.
	kube.ClearActions()
	boom := errors.New("boom")
	_, err = w.Update(ctx, client, pdb, func(p *policyv1.PodDisruptionBudget, set condition.SetFunc) error {
		set(ready(metav1.ConditionFalse, "Broken", ""), corev1.EventTypeWarning)
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Empty(t, reconciletest.WriteActions(&kube.Fake))
	assert.Empty(t, events(rec))

	// A failed write: no event; its retry that succeeds records it.
	failNext := true
	kube.PrependReactor("update", "poddisruptionbudgets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" && failNext {
			failNext = false
			return true, nil, apierrors.NewInternalError(errors.New("etcd unavailable"))
		}
		return false, nil, nil
	})
	_, err = update(3, ready(metav1.ConditionFalse, "Broken", "x"))
	require.Error(t, err)
	assert.Empty(t, events(rec))
	_, err = update(3, ready(metav1.ConditionFalse, "Broken", "x"))
	require.NoError(t, err)
	assert.Equal(t, []string{"Warning Broken x"}, events(rec))
}
