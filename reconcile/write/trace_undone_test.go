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
// write loop ("The annotation, and the write loops it must not make").
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

// Traced from the first write on, an update that a webhook undoes writes
// the annotation once, reported Unchanged (nothing the controller owns
// changed), and then nothing while the object stays so. A change of the
// object by someone else, or an update that changes what the controller
// owns, brings the annotation back to the next write.
func TestTracedUpdateUndoneByAWebhookWritesOnce(t *testing.T) {
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
	// reconcile runs one traced Ensure, delivers its answer to the cache,
	// and says what it did and whether the object changed.
	reconcile := func(mode string) (write.Change, bool, *corev1.ConfigMap) {
		t.Helper()
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, change, err := e.objects.Ensure(rctx, e.client(), settings(), setMode(mode))
		span.End()
		require.NoError(t, err)
		e.deliver(t, got)
		return change, e.server(t).ResourceVersion != before, got
	}

	change, written, _ := reconcile("a")
	assert.Equal(t, write.Unchanged, change, "the first traced write: only the annotation changed")
	assert.True(t, written, "the first traced write carries the annotation")
	for i := range 3 {
		change, written, _ = reconcile("a")
		assert.Equal(t, write.Unchanged, change, "reconcile %d", i+2)
		assert.False(t, written, "reconcile %d: the object was written again", i+2)
	}

	// Someone else changes the object: the next write carries the
	// annotation again, once.
	other := e.server(t)
	other.Labels = map[string]string{"by": "someone"}
	other, err = e.client().Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.deliver(t, other)
	_, written, _ = reconcile("a")
	assert.True(t, written, "the write after another's change carries the annotation")
	_, written, _ = reconcile("a")
	assert.False(t, written, "and the next one writes nothing")

	// The webhook lets the change through: the write, which carries no
	// annotation, is an update; the one after it carries the annotation.
	pinned = false
	change, written, got := reconcile("a")
	assert.Equal(t, write.Updated, change)
	assert.True(t, written)
	assert.Equal(t, "a", got.Data["mode"])
	change, written, got = reconcile("b")
	assert.Equal(t, write.Updated, change)
	assert.True(t, written)
	assert.NotEqual(t, other.Annotations[tracing.Annotation], got.Annotations[tracing.Annotation], "a changing write carries its trace context again")
	assert.NotEmpty(t, got.Annotations[tracing.Annotation])
}
