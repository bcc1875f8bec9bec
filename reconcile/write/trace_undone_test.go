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

// An update whose change a mutating webhook (or defaulting) undoes writes
// nothing: the API server answers at the version it had, Ensure says
// Unchanged, no event follows, and the controller settles (the package
// handles this case: "a webhook or defaulting undid the change"). With
// tracing on, the same update also carries the reconcile's new trace
// context in the annotation, which the webhook leaves: the object
// changes, a new resourceVersion, an update event, a reconcile that finds
// the same difference and writes again with a newer trace context, for
// ever. Tracing must not turn a write the server finds nothing in into a
// write loop ("The annotation, and why it makes no write loops").
func TestTracedUpdateUndoneByAWebhookSettles(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	stored := settings()
	stored.Data = map[string]string{"mode": "locked"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	// A mutating webhook pins data.mode to "locked".
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data["mode"] = "locked"
		return false, nil, nil
	})

	// Without tracing: the update is sent, changes nothing, settles.
	got, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	require.Equal(t, write.Unchanged, change, "untraced: the webhook undid the change")
	require.Equal(t, cm.ResourceVersion, got.ResourceVersion)

	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	for i := range 3 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, change, err = e.objects.Ensure(rctx, e.client(), settings(), setMode("a"))
		span.End()
		require.NoError(t, err)
		assert.Equal(t, write.Unchanged, change, "traced reconcile %d: the webhook undid the change", i+1)
		assert.Equal(t, before, e.server(t).ResourceVersion, "traced reconcile %d: the object was written (its annotation %q), so its event sets off the next reconcile", i+1, e.server(t).Annotations[tracing.Annotation])
		e.deliver(t, got)
	}
}
