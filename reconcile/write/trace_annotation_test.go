package write_test

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A mutate that owns the object's annotations (it sets them to the
// controller's desired set, or copies them from a parent object, a common
// pattern) converges without tracing: the second reconcile writes nothing.
// With tracing, the first write adds tracing.Annotation and the next mutate
// drops it again: were the annotation compared, the copy would differ from
// the cache by it alone, every reconcile would write, and every write's
// event would set off the next reconcile. It is never compared: the copy
// keeps the cached value, and an idle reconcile still writes nothing.
func TestTraceAnnotationDoesNotMakeEveryReconcileWrite(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	desired := map[string]string{"team": "a"}
	ownAnnotations := func(cm *corev1.ConfigMap) error {
		cm.Annotations = maps.Clone(desired)
		return nil
	}
	// Without tracing it converges: the second reconcile writes nothing.
	plain := newEnv(t)
	for i := range 2 {
		got, change, err := plain.objects.Ensure(reconciletest.Context(t), plain.client(), settings(), ownAnnotations)
		require.NoError(t, err)
		require.Equal(t, []write.Change{write.Created, write.Unchanged}[i], change)
		plain.deliver(t, got)
	}

	e := newEnv(t)
	for i := range 4 {
		ctx, span := tp.Tracer("test").Start(reconciletest.Context(t), "reconcile")
		ctx, wrote := tracing.WithWriteMark(ctx)
		got, change, err := e.objects.Ensure(ctx, e.client(), settings(), ownAnnotations)
		span.End()
		require.NoError(t, err)
		if i == 0 {
			require.Equal(t, write.Created, change)
		} else {
			assert.Equal(t, write.Unchanged, change, "reconcile %d: nothing the controller owns changed", i+1)
			assert.False(t, wrote(), "reconcile %d wrote", i+1)
		}
		e.deliver(t, got) // the write's event, which sets off the next reconcile
	}
}
