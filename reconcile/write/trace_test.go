package write_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A traced reconcile's create and update carry its trace context in the
// annotation and mark it as one that wrote; a reconcile that finds nothing
// to change writes nothing, although its own trace context differs from
// the annotation's: the annotation never makes a write.
func TestWritesCarryTheTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reconcileCtx := func() (context.Context, func() bool, string) {
		ctx, span := tp.Tracer("test").Start(reconciletest.Context(t), "reconcile")
		t.Cleanup(func() { span.End() })
		ctx, wrote := tracing.WithWriteMark(ctx)
		return ctx, wrote, tracing.Traceparent(ctx)
	}
	e := newEnv(t)

	ctx, wrote, tp1 := reconcileCtx()
	created, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Created, change)
	assert.True(t, wrote())
	assert.Equal(t, tp1, created.Annotations[tracing.Annotation], "the create carries the reconcile's trace context")
	assert.Equal(t, tp1, e.server(t).Annotations[tracing.Annotation])
	e.deliver(t, created)

	ctx, wrote, _ = reconcileCtx()
	e.kube.ClearActions()
	_, change, err = e.objects.Ensure(ctx, e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.Equal(t, write.Unchanged, change)
	assert.False(t, wrote())
	assert.Empty(t, reconciletest.WriteActions(&e.kube.Fake), "an idle reconcile writes nothing")
	assert.Equal(t, tp1, e.server(t).Annotations[tracing.Annotation], "and leaves the annotation")

	ctx, wrote, tp3 := reconcileCtx()
	updated, change, err := e.objects.Ensure(ctx, e.client(), settings(), setMode("b"))
	require.NoError(t, err)
	assert.Equal(t, write.Updated, change)
	assert.True(t, wrote())
	assert.Equal(t, tp3, updated.Annotations[tracing.Annotation], "the update carries the new trace context")
	assert.NotEqual(t, tp1, tp3)

	// Without tracing nothing is annotated.
	e2 := newEnv(t)
	plain, _, err := e2.objects.Ensure(reconciletest.Context(t), e2.client(), settings(), setMode("a"))
	require.NoError(t, err)
	assert.NotContains(t, plain.Annotations, tracing.Annotation)
}
