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

// review63i: once an update a webhook undid has settled the object, the
// next update that changes something the controller owns (a different
// change, which the webhook lets through) is sent without the trace
// context annotation: a real change, whose event sets off a reconcile
// that cannot link to the write. The package doc says the settled
// object's next updates "change nothing and no event follows".
func TestSettledObjectsNextRealChangeCarriesItsTraceContext(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	stored := settings()
	stored.Data = map[string]string{"mode": "locked"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	// The webhook refuses mode "a" (pins it back), lets any other through.
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if o.Data["mode"] == "a" {
			o.Data["mode"] = "locked"
		}
		return false, nil, nil
	})
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcile := func(mode string) (write.Change, string) {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		defer span.End()
		rctx, _ = tracing.WithWriteMark(rctx)
		got, change, err := e.objects.Ensure(rctx, e.client(), settings(), setMode(mode))
		require.NoError(t, err)
		e.deliver(t, got)
		return change, tracing.Traceparent(rctx)
	}
	change, _ := reconcile("a")
	require.Equal(t, write.Unchanged, change, "the webhook undid the change: settled")
	change, _ = reconcile("a")
	require.Equal(t, write.Unchanged, change)

	// The controller now wants mode "b": a real change.
	change, want := reconcile("b")
	require.Equal(t, write.Updated, change)
	require.Equal(t, "b", e.server(t).Data["mode"])
	assert.Equal(t, want, e.server(t).Annotations[tracing.Annotation],
		"the update that changed mode to b carries no trace context of its reconcile: the reconcile its event sets off links to an older write")
}
