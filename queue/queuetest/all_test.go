package queuetest_test

import (
	"context"
	"strings"
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

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// newLabeler returns a controller that labels every ConfigMap
// "<name>-mirror" mirrored=true: it acts on what the mirror controller
// wrote.
func newLabeler(t *testing.T, kube kubernetes.Interface, factory informers.SharedInformerFactory) *queue.Controller[cache.ObjectName] {
	lister := factory.Core().V1().ConfigMaps().Lister()
	ctrl, err := queue.New("labeler", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) || (err == nil && cm.Labels["mirrored"] == "true") {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		cm = cm.DeepCopy()
		metav1.SetMetaDataLabel(&cm.ObjectMeta, "mirrored", "true")
		_, err = kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return reconcile.Result{}, err
	}))
	require.NoError(t, err)
	mirrors := informer.ObjectFunc(func(cm *corev1.ConfigMap) bool { return strings.HasSuffix(cm.Name, "-mirror") })
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(),
		informer.EnqueueHandler[*corev1.ConfigMap](ctrl, informer.WithPredicates(mirrors)))))
	return ctrl
}

// Two controllers, one acting on the other's writes, run as one with All:
// Start returns once both are under way, and WaitIdle waits for both.
func TestAll(t *testing.T) {
	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	mirror, labeler := newMirror(t, kube, factory), newLabeler(t, kube, factory)
	ctrls := queuetest.All(mirror, labeler)
	queuetest.Start(t, ctrls, operator.WithInformers(factory))
	queuetest.WaitIdle(t, ctrls, kube)
	assert.True(t, mirror.Running(), "mirror under way")
	assert.True(t, labeler.Running(), "labeler under way")
	assert.True(t, ctrls.HasSynced())

	_, err := kube.CoreV1().ConfigMaps("ns").Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrls, kube)
	got, err := kube.CoreV1().ConfigMaps("ns").Get(t.Context(), "a-mirror", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", got.Data["v"])
	assert.Equal(t, "true", got.Labels["mirrored"], "the second controller acted on the first one's write")
	assert.Zero(t, ctrls.Len()+ctrls.Active()+ctrls.Retrying())
}

// All given to operator.Run directly runs each controller, and stops them
// all when its context ends.
func TestAllRun(t *testing.T) {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	mirror, labeler := newMirror(t, kube, factory), newLabeler(t, kube, factory)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(factory), operator.WithControllers(queuetest.All(mirror, labeler)))
	}()
	require.Eventually(t, func() bool { return mirror.Running() && labeler.Running() }, queuetest.Timeout, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.False(t, mirror.Running())
	assert.False(t, labeler.Running())
}
