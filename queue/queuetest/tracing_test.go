package queuetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// newCopier returns a controller that keeps, through reconcile/write, a
// ConfigMap "<name>-copy" with the data of every ConfigMap "<name>".
func newCopier(t *testing.T, kube kubernetes.Interface, factory informers.SharedInformerFactory, opts ...queue.Option) *queue.Controller[cache.ObjectName] {
	configMaps := factory.Core().V1().ConfigMaps()
	objs := write.New(configMaps.TypedInformer())
	ctrl, err := queue.New("copier", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		src, err := configMaps.Lister().ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-copy"}}
		_, _, err = objs.Ensure(ctx, kube.CoreV1().ConfigMaps(key.Namespace), want, func(cm *corev1.ConfigMap) error {
			cm.Data = src.Data
			return nil
		})
		return reconcile.Result{}, err
	}), opts...)
	require.NoError(t, err)
	sources := informer.ObjectFunc(func(cm *corev1.ConfigMap) bool { return !strings.HasSuffix(cm.Name, "-copy") })
	require.NoError(t, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl, informer.WithPredicates(sources)))))
	return ctrl
}

// newAuditor returns a controller that reads every ConfigMap "<name>-copy"
// and writes nothing.
func newAuditor(t *testing.T, factory informers.SharedInformerFactory, opts ...queue.Option) *queue.Controller[cache.ObjectName] {
	configMaps := factory.Core().V1().ConfigMaps()
	ctrl, err := queue.New("auditor", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), opts...)
	require.NoError(t, err)
	copies := informer.ObjectFunc(func(cm *corev1.ConfigMap) bool { return strings.HasSuffix(cm.Name, "-copy") })
	require.NoError(t, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl, informer.WithPredicates(copies)))))
	return ctrl
}

// spansOf returns the reconcile spans of a controller, in the order they
// ended.
func spansOf(sr *tracetest.SpanRecorder, controller string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "Reconcile "+controller {
			out = append(out, s)
		}
	}
	return out
}

// The traces of two controllers on a fake clientset, recorded in memory:
// the copier's reconcile wrote the copy, and the auditor's reconcile of
// the copy links to it. docs/tracing.md shows this test.
func TestTracesWithFakes(t *testing.T) {
	sr := tracetest.NewSpanRecorder() // keeps every ended span in memory
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	kube := fake.NewClientset()
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	copier := newCopier(t, kube, factory, queue.WithTracing(tp))
	auditor := newAuditor(t, factory, queue.WithTracing(tp))
	ctrls := queuetest.All(copier, auditor)
	queuetest.Start(t, ctrls, operator.WithInformers(factory))

	_, err := kube.CoreV1().ConfigMaps("ns").Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	queuetest.WaitIdle(t, ctrls, kube) // every reconcile's span has ended

	copies := spansOf(sr, "copier")
	require.Len(t, copies, 1)
	wrote := copies[0]
	assert.Contains(t, wrote.Attributes(), tracing.AttrWrote.Bool(true))
	assert.Contains(t, wrote.Attributes(), tracing.AttrKey.String("ns/a"))
	audits := spansOf(sr, "auditor")
	require.Len(t, audits, 1)
	assert.Contains(t, audits[0].Attributes(), tracing.AttrWrote.Bool(false))
	require.Len(t, audits[0].Links(), 1)
	assert.Equal(t, wrote.SpanContext().SpanID(), audits[0].Links()[0].SpanContext.SpanID(), "the auditor's reconcile links to the write")
}
