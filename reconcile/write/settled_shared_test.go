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
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// One Objects (one controller) writes a shared object from the reconciles
// of two keys (two owners that each own one key of a shared ConfigMap),
// and a mutating webhook undoes both changes. Untraced, no update writes
// anything; traced, the first writes the annotation and the object
// settles: the other owner's update, another change, goes without it
// too, else each owner's annotation would set off the other's reconcile
// for ever.
func TestTracedSharedObjectTwoChangesUndoneByAWebhookSettle(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	stored := settings()
	stored.Data = map[string]string{"a": "locked", "b": "locked"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	// A mutating webhook pins both keys to "locked".
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data
		d["a"], d["b"] = "locked", "locked"
		return false, nil, nil
	})
	setKey := func(k string) func(cm *corev1.ConfigMap) error {
		return func(cm *corev1.ConfigMap) error {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k] = "mine"
			return nil
		}
	}
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcile := func(k string) bool {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile of owner "+k)
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, change, err := e.objects.Ensure(rctx, e.client(), settings(), setKey(k))
		span.End()
		require.NoError(t, err)
		require.Equal(t, write.Unchanged, change, "the webhook undid the change")
		e.deliver(t, got)
		return e.server(t).ResourceVersion != before
	}
	// Each write's event sets off both owners' reconciles. Give each a
	// couple of writes to settle, then none may write.
	for range 2 {
		reconcile("a")
		reconcile("b")
	}
	for i := range 4 {
		assert.False(t, reconcile("a"), "round %d: owner a's reconcile wrote the object again (annotation %q)", i+1, e.server(t).Annotations[tracing.Annotation])
		assert.False(t, reconcile("b"), "round %d: owner b's reconcile wrote the object again (annotation %q)", i+1, e.server(t).Annotations[tracing.Annotation])
	}
}
