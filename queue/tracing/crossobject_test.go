package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A write of one controller sets off another's reconcile, which links to
// the write's reconcile span: the "copier" controller reconciles a Secret
// key and creates a ConfigMap through package write; the "watcher"
// controller, on the ConfigMap informer, reconciles it with a link to the
// copier's span. Real informers over a fake clientset.
func TestReconcileLinksToTheWriteThatSetItOff(t *testing.T) {
	tp, rec := newProvider(t, sdktrace.WithSampler(sdktrace.ParentBased(tracing.FollowLinks(sdktrace.AlwaysSample()))))
	client := fake.NewClientset()
	reconciletest.Strict(client) // resourceVersions as an API server gives them
	factory := informers.NewSharedInformerFactory(client, 0)
	configMaps := factory.Core().V1().ConfigMaps()
	writes := write.New(configMaps.TypedInformer())

	copier, err := queue.New("copier", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		_, _, err := writes.Ensure(ctx, client.CoreV1().ConfigMaps(key.Namespace), want, func(cm *corev1.ConfigMap) error {
			cm.Data = map[string]string{"copied": "yes"}
			return nil
		})
		return reconcile.Result{}, err
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	require.NoError(t, copier.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](informer.QueueFunc[cache.ObjectName](func(cache.ObjectName) {})))))
	watcher, err := queue.New("watcher", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	require.NoError(t, watcher.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](watcher))))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, c := range []*queue.Controller[cache.ObjectName]{copier, watcher} {
		go func() { _ = c.Run(ctx); done <- struct{}{} }()
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		<-done
		<-done
		factory.Shutdown()
	}()
	copier.Add(cache.ObjectName{Namespace: "ns", Name: "settings"})

	var write, watch sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "Reconcile copier":
				write = s
			case "Reconcile watcher":
				watch = s
			}
		}
		return write != nil && watch != nil
	}, 10*time.Second, time.Millisecond)

	assert.True(t, attrsOf(write)[tracing.AttrWrote].AsBool())
	require.Len(t, watch.Links(), 1)
	link := watch.Links()[0]
	assert.Equal(t, write.SpanContext().TraceID(), link.SpanContext.TraceID(), "the watcher's reconcile links to the copier's")
	assert.Equal(t, write.SpanContext().SpanID(), link.SpanContext.SpanID())
	got := attrsOf(watch)
	assert.Equal(t, "add", got[tracing.AttrTriggerEvent].AsString())
	assert.Equal(t, "object", got[tracing.AttrTriggerSource].AsString())
	assert.Equal(t, "ns/settings", got[tracing.AttrTriggerObject].AsString())
	assert.NotEmpty(t, got[tracing.AttrTriggerResourceVersion].AsString())
	assert.NotEqual(t, write.SpanContext().TraceID(), watch.SpanContext().TraceID(), "a trace of its own, linked")
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}
