package write_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/queue/tracing"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A mutate that sets the annotations it owns whole (the map it wants,
// already on the object) on an object of a trimmed informer that keeps
// the annotations changes nothing, though the copy lacks the trimmed mark
// (informer.TrimmedAnnotation): the mark is never compared, as the trace
// context's annotation is not, so nothing is sent.
func TestTrimmedMutateReplacingAnnotationsSendsNothing(t *testing.T) {
	e := newDeploymentEnvKeeping(t, "metadata.annotations")
	ctx := reconciletest.Context(t)
	require.Equal(t, "a", e.server(t).Annotations["team"])
	for i := range 3 {
		e.kube.ClearActions()
		_, change, err := e.objects.Ensure(ctx, e.client(), webWant(), func(d *appsv1.Deployment) error {
			d.Annotations = map[string]string{"team": "a"}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, write.Unchanged, change)
		var sent []string
		for _, a := range e.kube.Actions() {
			if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				sent = append(sent, a.GetVerb())
			}
		}
		assert.Empty(t, sent, "reconcile %d: nothing differs, yet it sent a request", i+1)
		e.deliver(t)
	}
}

// Traced, the same idle reconciles each mark the reconcile as one that
// wrote (tracing.MarkWrite), so the spans an option drops for reconciles
// that wrote nothing are kept, and the first writes the annotation: a new
// version and an event for a reconcile that had nothing to do.
func TestTrimmedMutateReplacingAnnotationsTracedWritesNothing(t *testing.T) {
	e := newDeploymentEnvKeeping(t, "metadata.annotations")
	ctx := reconciletest.Context(t)
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	marked, versions := 0, 0
	for range 3 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, wrote := tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		_, _, err := e.objects.Ensure(rctx, e.client(), webWant(), func(d *appsv1.Deployment) error {
			d.Annotations = map[string]string{"team": "a"}
			return nil
		})
		span.End()
		require.NoError(t, err)
		if wrote() {
			marked++
		}
		if e.server(t).ResourceVersion != before {
			versions++
		}
		e.deliver(t)
	}
	assert.Zero(t, versions, "idle traced reconciles wrote the object (annotation %q)", e.server(t).Annotations[tracing.Annotation])
	assert.Zero(t, marked, "idle traced reconciles were marked as ones that wrote")
}
