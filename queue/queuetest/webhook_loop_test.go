package queuetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A controller that wants data.mode "a" in its ConfigMap, where a mutating
// webhook pins it to "locked": every reconcile sends an update that the
// API server finds nothing in (same resourceVersion, no event), so the
// controller settles after its first reconcile. Turning tracing on must
// not change that; with it, every such update also carries the
// reconcile's new trace context in the annotation, which is a change: a
// new resourceVersion, an update event, the next reconcile, for ever.
func TestTracingMakesNoWriteLoopOfAWebhookUndoneUpdate(t *testing.T) {
	for _, traced := range []bool{false, true} {
		name := "untraced"
		if traced {
			name = "traced"
		}
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings"}, Data: map[string]string{"mode": "locked"}})
			reconciletest.Strict(kube)
			kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data["mode"] = "locked" // the webhook
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(kube, 0)
			configMaps := factory.Core().V1().ConfigMaps()
			objs := write.New(configMaps.TypedInformer())
			var opts []queue.Option
			if traced {
				tp := sdktrace.NewTracerProvider()
				t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts = append(opts, queue.WithTracing(tp))
			}
			ctrl, err := queue.New("pinner", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
				want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				_, _, err := objs.Ensure(ctx, kube.CoreV1().ConfigMaps(key.Namespace), want, func(cm *corev1.ConfigMap) error {
					if cm.Data == nil {
						cm.Data = map[string]string{}
					}
					cm.Data["mode"] = "a"
					return nil
				})
				return reconcile.Result{}, err
			}), opts...)
			require.NoError(t, err)
			require.NoError(t, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
			kube.ClearActions()
			queuetest.Start(t, ctrl, operator.WithInformers(factory))
			time.Sleep(time.Second)
			var updates int
			for _, a := range reconciletest.WriteActions(&kube.Fake) {
				if a.GetVerb() == "update" {
					updates++
				}
			}
			assert.LessOrEqual(t, updates, 2, "updates sent in a second")
		})
	}
}
