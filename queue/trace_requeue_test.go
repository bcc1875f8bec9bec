package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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

// A Result.RequeueAfter records its "after" trigger when the delay fires,
// not when the reconcile asks for it: an event that arrives in between sets
// off a reconcile of its own trigger only, and the reconcile that the delay
// then sets off names "after". Retries record theirs the same way.
func TestTracingRequeueAfterTriggerGoesToTheDelayedRun(t *testing.T) {
	tp, rec := newTracer(t)
	var calls atomic.Int32
	c, err := queue.New("delayed", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		if calls.Add(1) == 1 {
			return reconcile.Result{RequeueAfter: 500 * time.Millisecond}, nil
		}
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	handler := informer.EnqueueHandler[*corev1.ConfigMap](c)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	handler.OnAdd(cm, false)
	stop := startController(t, context.Background(), c)
	waitSpans(t, rec, 1) // asked for the delay

	updated := cm.DeepCopy()
	updated.ResourceVersion = "2"
	handler.OnUpdate(cm, updated) // an event before the delay fires
	waitSpans(t, rec, 2)
	spans := waitSpans(t, rec, 3) // the delay fired
	require.NoError(t, stop())

	second, third := attrs(spans[1].Attributes()), attrs(spans[2].Attributes())
	for i, s := range spans {
		t.Logf("span %d: triggers=%v links=%d source=%q", i+1, attrs(s.Attributes())[tracing.AttrTriggers].AsInt64(), len(s.Links()), attrs(s.Attributes())[tracing.AttrTriggerSource].AsString())
	}
	assert.Equal(t, int64(1), second[tracing.AttrTriggers].AsInt64(), "the update's reconcile was set off by the update only")
	assert.Equal(t, "after", third[tracing.AttrTriggerSource].AsString(), "the reconcile the delay set off names it")
	assert.Equal(t, int64(1), third[tracing.AttrTriggers].AsInt64())
}
