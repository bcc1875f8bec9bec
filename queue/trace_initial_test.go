package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The objects of an informer's initial list carry the annotation of
// whatever write last changed them, perhaps days ago in a previous process;
// the operator's start, not that write, sets off their reconciles. A
// handler links to an object's annotation only when the event brought it,
// so the initial list's reconciles do not link to the old write (and with
// FollowLinks are not sampled by its decision).
func TestTracingInitialListDoesNotLinkToAnOldWrite(t *testing.T) {
	tp, rec := newTracer(t)
	oldCtx, oldWrite := tp.Tracer("yesterday").Start(context.Background(), "update configmap")
	oldWrite.End()

	c, err := queue.New("restart", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}}
	tracing.SetAnnotation(oldCtx, cm)
	informer.EnqueueHandler[*corev1.ConfigMap](c).OnAdd(cm, true) // the initial list

	stop := startController(t, context.Background(), c)
	spans := waitSpans(t, rec, 2)
	require.NoError(t, stop())
	s := spans[1]
	assert.Equal(t, "initial-list", attrs(s.Attributes())[tracing.AttrTriggerEvent].AsString())
	require.Len(t, s.Links(), 1)
	assert.False(t, s.Links()[0].SpanContext.IsValid(), "the initial list links to the old write %s", s.Links()[0].SpanContext.SpanID())
}
