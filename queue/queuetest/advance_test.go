package queuetest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// expiresAt is the annotation whose time (RFC 3339) says when the expiry
// controller deletes a ConfigMap.
const expiresAt = "example.com/expires-at"

// newExpiry returns a controller that deletes each ConfigMap once the time
// of its expiresAt annotation has come, waiting for it with RequeueAfter on
// the clock it is given with queue.WithClock.
func newExpiry(kube kubernetes.Interface, factory informers.SharedInformerFactory, clk *clocktesting.FakeClock, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	configMaps := factory.Core().V1().ConfigMaps()
	lister := configMaps.Lister()
	ctrl, err := queue.New("expiry", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		at, err := time.Parse(time.RFC3339, cm.Annotations[expiresAt])
		if err != nil {
			return reconcile.Result{}, nil // no expiry
		}
		if left := at.Sub(clk.Now()); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		err = kube.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}), opts...)
	if err != nil {
		return nil, err
	}
	return ctrl, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl)))
}

// A schedule driven by a fake clock: a ConfigMap is deleted when its time
// comes, not a moment before, and no test waits for real time to pass.
func TestAdvanceRunsWhatFallsDue(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "session",
		Annotations: map[string]string{expiresAt: start.Add(time.Hour).Format(time.RFC3339)}}})
	factory := informers.NewSharedInformerFactory(kube, 0)

	clk := clocktesting.NewFakeClock(start)
	ctrl, err := newExpiry(kube, factory, clk, queue.WithClock(clk))
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	queuetest.Advance(t, ctrl, clk, time.Hour-time.Second, kube)
	_, err = kube.CoreV1().ConfigMaps("ns").Get(ctx, "session", metav1.GetOptions{})
	require.NoError(t, err, "a second before its time, the ConfigMap is there")
	due, ok := ctrl.NextDue()
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Hour), due, "the controller waits for the expiry")

	queuetest.Advance(t, ctrl, clk, time.Second, kube)
	_, err = kube.CoreV1().ConfigMaps("ns").Get(ctx, "session", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deleted when its time came: %v", err)
	_, ok = ctrl.NextDue()
	assert.False(t, ok, "nothing waits any more")
}

// The doc example of Advance, as written there.
func TestAdvanceDocExample(t *testing.T) {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	clk := clocktesting.NewFakeClock(time.Now())
	ctrl, err := newExpiry(kube, factory, clk, queue.WithClock(clk))
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	queuetest.Advance(t, ctrl, clk, time.Hour, kube) // what is due within the hour runs, in order
}

// Periodic ticks and the retries of a failing key wait for the fake clock
// too, and Advance runs each in its turn: six ticks of a ten-minute source
// in an hour, and retries after their growing backoff until the key
// succeeds.
func TestAdvanceRunsTicksAndRetries(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	var calls, ticks atomic.Int32
	ctrl, err := queue.New("flaky", reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		if calls.Add(1) <= 4 {
			return reconcile.Result{}, errors.New("not yet")
		}
		return reconcile.Result{}, nil
	}), queue.WithClock(clk))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.Periodic(ctrl, 10*time.Minute, func(context.Context) ([]string, error) {
		ticks.Add(1)
		return nil, nil
	})))
	queuetest.Start(t, ctrl)

	ctrl.Add("a")
	queuetest.Advance(t, ctrl, clk, 0)
	assert.Equal(t, int32(1), calls.Load(), "the retry waits for the clock")
	assert.Equal(t, 1, ctrl.Retrying())

	queuetest.Advance(t, ctrl, clk, time.Second)
	assert.Equal(t, int32(5), calls.Load(), "retried after each backoff (5, 10, 20, 40 ms) until it succeeded")
	assert.Zero(t, ctrl.Retrying())
	assert.Zero(t, ticks.Load(), "no tick within the first second")

	queuetest.Advance(t, ctrl, clk, time.Hour-time.Second)
	assert.Equal(t, int32(6), ticks.Load(), "one tick each ten minutes")
	due, ok := ctrl.NextDue()
	require.True(t, ok)
	assert.Equal(t, start.Add(70*time.Minute), due, "the next tick")
}

// One clock for the whole test: the strict fake stamps creationTimestamp by
// the clock the controller waits by, so a controller that deletes
// ConfigMaps a day after their creation is tested by moving that clock a
// day.
func TestOneClockForObjectsAndDelays(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	kube := fake.NewClientset()
	reconciletest.Strict(kube).WithClock(clk)
	factory := informers.NewSharedInformerFactory(kube, 0)
	configMaps := factory.Core().V1().ConfigMaps()
	const ttl = 24 * time.Hour
	ctrl, err := queue.New("ttl", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := configMaps.Lister().ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		if left := cm.CreationTimestamp.Add(ttl).Sub(clk.Now()); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		if err := kube.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}), queue.WithClock(clk))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	queuetest.Start(t, ctrl, operator.WithInformers(factory))

	create := func(name string) {
		t.Helper()
		_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	exists := func(name string) bool {
		t.Helper()
		_, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	create("old")
	queuetest.Advance(t, ctrl, clk, time.Hour, kube)
	create("young")
	queuetest.Advance(t, ctrl, clk, ttl-time.Hour-time.Second, kube)
	assert.True(t, exists("old"), "a second before its day is over")
	queuetest.Advance(t, ctrl, clk, time.Second, kube)
	assert.False(t, exists("old"), "deleted a day after its creation")
	assert.True(t, exists("young"))
	queuetest.Advance(t, ctrl, clk, time.Hour, kube)
	assert.False(t, exists("young"), "deleted a day after its creation")
}
