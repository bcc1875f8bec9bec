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
)

// A mutate that sets a list whose order carries no meaning in an order
// that varies (built from a Go map, as finalizers or env vars often
// are), on an object whose webhook normalizes the list. Untraced, no
// update writes anything; traced, the first writes the annotation and
// the object settles, whatever order the next updates send.
func TestTracedListOrderUndoneByAWebhookSettles(t *testing.T) {
	e := newEnv(t)
	ctx := reconciletest.Context(t)
	stored := settings()
	stored.Finalizers = []string{"example.com/a", "example.com/b", "example.com/c"}
	cm, err := e.client().Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	e.deliver(t, cm)
	// A mutating webhook keeps the finalizers in their stored order.
	e.kube.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).Finalizers = []string{"example.com/a", "example.com/b", "example.com/c"}
		return false, nil, nil
	})
	// The orders a map iteration gives, one reconcile after another: the
	// same set of finalizers each time.
	orders := [][]string{{"example.com/b", "example.com/a", "example.com/c"}, {"example.com/c", "example.com/b", "example.com/a"}}
	n := 0
	setFinalizers := func(cm *corev1.ConfigMap) error {
		cm.Finalizers = append([]string(nil), orders[n%2]...)
		n++
		return nil
	}
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	for i := range 6 {
		rctx, span := tp.Tracer("test").Start(ctx, "reconcile")
		rctx, _ = tracing.WithWriteMark(rctx)
		before := e.server(t).ResourceVersion
		got, _, err := e.objects.Ensure(rctx, e.client(), settings(), setFinalizers)
		span.End()
		require.NoError(t, err)
		e.deliver(t, got)
		if i >= 2 {
			assert.Equal(t, before, e.server(t).ResourceVersion, "reconcile %d: the object was written again (annotation %q)", i+1, e.server(t).Annotations[tracing.Annotation])
		}
	}
}
