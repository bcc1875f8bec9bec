package multicluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A cluster's queue passes the triggers of its handlers on to a traced
// controller, under the key of its cluster; with an untraced controller
// it records nothing.
func TestClusterQueueForwardsTriggers(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	r := reconcile.Func[Key](func(context.Context, Key) (reconcile.Result, error) { return reconcile.Result{}, nil })
	traced, err := queue.New("traced", r, queue.WithTracing(tp))
	require.NoError(t, err)
	plain, err := queue.New("plain", r)
	require.NoError(t, err)

	rec := &recordingQueue{Controller: traced}
	cq := &clusterQueue{m: &member{name: "west"}, q: rec}
	require.True(t, cq.Tracing())
	require.NotNil(t, tracing.RecorderOf[cache.ObjectName](cq))
	cq.Trigger(cache.ObjectName{Namespace: "ns", Name: "a"}, tracing.Trigger{Event: tracing.EventAdd, Source: tracing.SourceObject})
	assert.Equal(t, []Key{{Cluster: "west", ObjectName: cache.ObjectName{Namespace: "ns", Name: "a"}}}, rec.keys)

	assert.False(t, (&clusterQueue{m: &member{name: "west"}, q: plain}).Tracing())
	assert.Equal(t, "west", Key{Cluster: "west"}.ClusterName())
}

// recordingQueue is a traced controller that remembers the keys of the
// triggers it is given.
type recordingQueue struct {
	*queue.Controller[Key]
	keys []Key
}

func (r *recordingQueue) Trigger(key Key, t tracing.Trigger) {
	r.keys = append(r.keys, key)
	r.Controller.Trigger(key, t)
}
