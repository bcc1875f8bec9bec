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

// review63j: the package doc says a settled object's next updates that
// make the same change are sent without the annotation "so they change
// nothing and no event follows", and docs/tracing.md no longer says that
// such an update may write (its caveat "an update sent without it still
// carries the traceparent header, but the reconcile its event sets off
// has no link to it" was dropped). Once the webhook lets the change
// through (its policy removed or changed), the same change is a real
// write, reported Updated, whose event follows, and it carries no trace
// context of its reconcile: the object keeps the annotation of an older
// write, so the reconcile it sets off links to the wrong write.
func TestSettledSameChangeLetThroughCarriesItsTraceContext(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	stored := settings()
	stored.Data = map[string]string{"mode": "locked"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	pinned := true
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if pinned {
			a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Data["mode"] = "locked"
		}
		return false, nil, nil
	})
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcile := func() (write.Change, string, bool) {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		defer span.End()
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, change, err := e.objects.Ensure(rctx, e.client(), settings(), setMode("a"))
		require.NoError(t, err)
		e.deliver(t, got)
		return change, tracing.Traceparent(rctx), e.server(t).ResourceVersion != before
	}
	change, _, _ := reconcile()
	require.Equal(t, write.Unchanged, change, "the webhook undid the change: settled")
	_, _, written := reconcile()
	require.False(t, written, "settled")

	pinned = false // the webhook's policy is removed
	change, want, written := reconcile()
	require.Equal(t, write.Updated, change)
	require.True(t, written, "the change was written: an event follows")
	require.Equal(t, "a", e.server(t).Data["mode"])
	assert.Equal(t, want, e.server(t).Annotations[tracing.Annotation],
		"the update that changed mode to a carries no trace context of its reconcile: the reconcile its event sets off links to an older write")
}
