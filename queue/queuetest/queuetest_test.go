package queuetest_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newMirror returns a controller that keeps a ConfigMap "<name>-mirror"
// with the data of every ConfigMap "<name>", updating from its cache.
func newMirror(t *testing.T, kube kubernetes.Interface, factory informers.SharedInformerFactory) *queue.Controller[cache.ObjectName] {
	lister := factory.Core().V1().ConfigMaps().Lister()
	ctrl, err := queue.New("mirror", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		if strings.HasSuffix(key.Name, "-mirror") {
			return reconcile.Result{}, nil
		}
		src, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		mirrors := kube.CoreV1().ConfigMaps(key.Namespace)
		mirror, err := lister.ConfigMaps(key.Namespace).Get(key.Name + "-mirror")
		if apierrors.IsNotFound(err) {
			_, err = mirrors.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-mirror"}, Data: src.Data}, metav1.CreateOptions{})
			return reconcile.Result{}, err
		} else if err != nil {
			return reconcile.Result{}, err
		}
		if maps.Equal(mirror.Data, src.Data) {
			return reconcile.Result{}, nil
		}
		mirror = mirror.DeepCopy()
		mirror.Data = src.Data
		_, err = mirrors.Update(ctx, mirror, metav1.UpdateOptions{}) // 409 when the cache is stale: retried
		return reconcile.Result{}, err
	}))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	return ctrl
}

func TestStartAndWaitIdle(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	reconciletest.Strict(kube) // 409 on stale updates, as a real API server
	factory := informers.NewSharedInformerFactory(kube, 0)
	ctrl := newMirror(t, kube, factory) // a *queue.Controller, or one embedding it
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	queuetest.WaitIdle(t, ctrl, kube)
	// assert on the objects in kube
	cms := kube.CoreV1().ConfigMaps("ns")
	_, err := cms.Get(ctx, "a-mirror", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no source, no mirror")
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrl, kube)
	mirror, err := cms.Get(ctx, "a-mirror", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", mirror.Data["v"])

	// Someone else changes the mirror while the source changes: the
	// controller's update from its cache may conflict, and is retried.
	for i, v := range []string{"2", "3", "4"} {
		src, err := cms.Get(ctx, "a", metav1.GetOptions{})
		require.NoError(t, err)
		src.Data["v"] = v
		_, err = cms.Update(ctx, src, metav1.UpdateOptions{})
		require.NoError(t, err)
		// The controller writes the mirror too: this writer retries on 409
		// as any client must.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m, err := cms.Get(ctx, "a-mirror", metav1.GetOptions{})
			if err != nil {
				return err
			}
			m.Labels = map[string]string{"touched": string(rune('a' + i))}
			_, err = cms.Update(ctx, m, metav1.UpdateOptions{})
			return err
		})
		require.NoError(t, err)
	}
	queuetest.WaitIdle(t, ctrl, kube)
	mirror, err = cms.Get(ctx, "a-mirror", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "4", mirror.Data["v"], "the mirror converged")
}

// WaitIdle returns only once a failed key's retry has run, even when its
// backoff is far longer than Quiet; a delay the reconciler asked for is
// not waited for.
func TestWaitIdleWaitsForRetries(t *testing.T) {
	const backoff = 20 * queuetest.Quiet
	tests := []struct {
		name string
		// first is what the first reconcile returns; later ones succeed.
		first     func() (reconcile.Result, error)
		wantCalls int32
	}{
		{name: "error", first: func() (reconcile.Result, error) { return reconcile.Result{}, errors.New("flaky") }, wantCalls: 2},
		{name: "panic", first: func() (reconcile.Result, error) { panic("flaky") }, wantCalls: 2},
		{name: "requeue after", first: func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Hour}, nil }, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			ctrl, err := queue.New("flaky", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				if calls.Add(1) == 1 {
					return tt.first()
				}
				return reconcile.Result{}, nil
			}), queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](backoff, backoff)))
			require.NoError(t, err)
			queuetest.Start(t, ctrl)
			ctrl.Add("a")
			queuetest.WaitIdle(t, ctrl)
			assert.Equal(t, tt.wantCalls, calls.Load(), "reconciles when WaitIdle returned")
			assert.Zero(t, ctrl.Retrying())
		})
	}
}
