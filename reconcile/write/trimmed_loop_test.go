package write_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// An object read through a trimmed informer (informer.Trim) is updated by
// a patch, whose answer is the whole object: it is judged on what the
// controller could see or set, so a traced update whose change a webhook
// undoes settles as an untrimmed one does. Each traced write of the
// annotation would otherwise set off the next reconcile (the trimmed copy
// keeps the annotation), which would write again, for ever. A
// Deployment's generation moves on with its annotations, which counts as
// no change either.
func TestTracedTrimmedUpdateUndoneByAWebhookSettles(t *testing.T) {
	e := newDeploymentEnv(t)
	ctx := reconciletest.Context(t)
	// A mutating webhook pins the replicas to 1: it takes them out of the
	// patch (the server has 1).
	e.kube.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patch := a.(k8stesting.PatchAction).GetPatch() // the reactors share it
		var m map[string]any
		require.NoError(t, json.Unmarshal(patch, &m))
		if spec, ok := m["spec"].(map[string]any); ok {
			delete(spec, "replicas")
			if len(spec) == 0 {
				delete(m, "spec")
			}
		}
		data, err := json.Marshal(m)
		require.NoError(t, err)
		require.LessOrEqual(t, len(data), len(patch))
		n := copy(patch, data)
		for i := n; i < len(patch); i++ {
			patch[i] = ' '
		}
		return false, nil, nil
	})
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	writes := 0
	for range 5 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		_, _, err := e.objects.Ensure(rctx, e.client(), webWant(), nginx(2, "nginx:1"))
		span.End()
		require.NoError(t, err)
		if e.server(t).ResourceVersion != before {
			writes++
		}
		e.deliver(t)
	}
	assert.Equal(t, int32(1), *e.server(t).Spec.Replicas, "the webhook undid the change")
	assert.LessOrEqual(t, writes, 1, "5 traced reconciles of a trimmed object whose change a webhook undoes wrote it %d times (annotation %q)",
		writes, e.server(t).Annotations[tracing.Annotation])
}
