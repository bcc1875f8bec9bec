package write_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// Two traced controllers (two Objects, as in two controllers or two
// operators) each send an update of the same object that a mutating
// webhook undoes. Untraced, neither update writes anything and both
// settle. Traced, each one's write changes only the annotation, which
// moves the object off the version the other one remembered as settled,
// so the other's next update carries its annotation again: the two
// controllers write the object for ever, each write setting off the
// other's reconcile.
func TestTwoTracedControllersUndoneByAWebhookSettle(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	// A second controller, with its own informer and Objects.
	inf2 := informers.NewSharedInformerFactory(e.kube, 0).Core().V1().ConfigMaps().TypedInformer()
	require.NoError(t, inf2.GetIndexer().Replace(nil, "1"))
	objects2 := write.New(inf2)
	deliver := func(cm *corev1.ConfigMap) {
		require.NoError(t, e.cache.Update(cm))
		require.NoError(t, inf2.GetIndexer().Update(cm))
	}

	stored := settings()
	stored.Data = map[string]string{"mode": "locked"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	deliver(cm)
	// A mutating webhook pins data.mode to "locked".
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data["mode"] = "locked"
		return false, nil, nil
	})

	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcile := func(o *write.Objects[*corev1.ConfigMap], mode string) bool {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, _, err := o.Ensure(rctx, e.client(), settings(), setMode(mode))
		span.End()
		require.NoError(t, err)
		deliver(got)
		return e.server(t).ResourceVersion != before
	}
	// Each write's event sets off the other controller's reconcile. Give
	// both a couple of writes to settle, then none may write.
	for range 2 {
		reconcile(e.objects, "a")
		reconcile(objects2, "b")
	}
	for i := range 4 {
		assert.False(t, reconcile(e.objects, "a"), "round %d: controller A wrote the object again (annotation %q)", i+1, e.server(t).Annotations[tracing.Annotation])
		assert.False(t, reconcile(objects2, "b"), "round %d: controller B wrote the object again (annotation %q)", i+1, e.server(t).Annotations[tracing.Annotation])
	}
}
