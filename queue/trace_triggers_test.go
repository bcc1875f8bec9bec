package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The events that set a key off are the links of its reconcile's span:
// the own object's add, carrying the trace context of the write that made
// it; an owned object's update whose annotation changed (a link to that
// write); a resync (no link, the annotation is old); the latest trigger is
// in the span's attributes too.
func TestTracingTriggersAreLinks(t *testing.T) {
	tp, rec := newTracer(t)
	writer := tp.Tracer("writer")
	ctx1, write1 := writer.Start(context.Background(), "create configmap")
	ctx2, write2 := writer.Start(context.Background(), "update deployment")
	write1.End()
	write2.End()

	c, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	require.True(t, c.Tracing())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	tracing.SetAnnotation(ctx1, cm)
	informer.EnqueueHandler[*corev1.ConfigMap](c).OnAdd(cm, false)

	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "u", Controller: ptr.To(true)}
	old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", ResourceVersion: "5", OwnerReferences: []metav1.OwnerReference{ref}}}
	updated := old.DeepCopy()
	updated.ResourceVersion = "6"
	tracing.SetAnnotation(ctx2, updated)
	owned := owner.EnqueueOwner[*appsv1.Deployment](schema.GroupKind{Kind: "ConfigMap"}, c)
	owned.OnUpdate(old, updated)
	owned.OnUpdate(updated, updated) // a resync

	stop := startController(t, context.Background(), c)
	spans := waitSpans(t, rec, 3) // the two writes, then the reconcile
	require.NoError(t, stop())
	s := spans[2]
	require.Equal(t, "Reconcile configmaps", s.Name())
	got := attrs(s.Attributes())
	assert.Equal(t, int64(3), got[tracing.AttrTriggers].AsInt64())
	assert.Equal(t, "resync", got[tracing.AttrTriggerEvent].AsString(), "the latest trigger")
	assert.Equal(t, "owner", got[tracing.AttrTriggerSource].AsString())
	assert.Equal(t, "ns/d", got[tracing.AttrTriggerObject].AsString())
	assert.Equal(t, "6", got[tracing.AttrTriggerResourceVersion].AsString())

	links := s.Links()
	require.Len(t, links, 3)
	assert.Equal(t, write1.SpanContext().SpanID(), links[0].SpanContext.SpanID(), "the add links to the write that made the object")
	assert.Equal(t, map[attribute.Key]attribute.Value{
		tracing.AttrTriggerEvent: attribute.StringValue("add"), tracing.AttrTriggerSource: attribute.StringValue("object"),
		tracing.AttrTriggerObject: attribute.StringValue("ns/a"), tracing.AttrTriggerResourceVersion: attribute.StringValue("1"),
	}, attrs(links[0].Attributes))
	assert.Equal(t, write2.SpanContext().SpanID(), links[1].SpanContext.SpanID(), "the owned object's update links to its write")
	assert.Equal(t, "update", attrs(links[1].Attributes)[tracing.AttrTriggerEvent].AsString())
	assert.False(t, links[2].SpanContext.IsValid(), "a resync does not link to the old write")
	assert.NotEqual(t, write1.SpanContext().TraceID(), s.SpanContext().TraceID(), "the reconcile starts a trace of its own")
}

// A key keeps at most tracing.MaxTriggers triggers as links and counts
// the others.
func TestTracingTriggersBounded(t *testing.T) {
	tp, rec := newTracer(t)
	c, err := queue.New("bounded", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	for range tracing.MaxTriggers + 4 {
		c.Trigger("k", tracing.Trigger{Source: tracing.SourceChannel})
	}
	c.Add("k")
	stop := startController(t, context.Background(), c)
	s := waitSpans(t, rec, 1)[0]
	require.NoError(t, stop())
	assert.Len(t, s.Links(), tracing.MaxTriggers)
	got := attrs(s.Attributes())
	assert.Equal(t, int64(tracing.MaxTriggers+4), got[tracing.AttrTriggers].AsInt64())
	assert.Equal(t, int64(4), got[tracing.AttrTriggersDropped].AsInt64())
}

// The sources outside informers name themselves: a channel, a periodic
// tick, a delay asked for.
func TestTracingSourceTriggers(t *testing.T) {
	tp, rec := newTracer(t)
	c, err := queue.New("sources", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	ch := make(chan string, 1)
	ch <- "from-channel"
	require.NoError(t, c.Watch(queue.Channel(c, ch, func(s string) []string { return []string{s} })))
	require.NoError(t, c.Watch(queue.Periodic(c, time.Hour, func(context.Context) ([]string, error) { return []string{"from-tick"}, nil }, queue.AtStart())))
	c.AddAfter("delayed", time.Millisecond)
	stop := startController(t, context.Background(), c)
	spans := waitSpans(t, rec, 3)
	require.NoError(t, stop())
	sources := map[string]string{}
	for _, s := range spans {
		got := attrs(s.Attributes())
		sources[got[tracing.AttrKey].AsString()] = got[tracing.AttrTriggerSource].AsString()
	}
	assert.Equal(t, map[string]string{"from-channel": "channel", "from-tick": "periodic", "delayed": "after"}, sources)
}

// A fleet key's span names its cluster.
func TestTracingFleetKeyNamesCluster(t *testing.T) {
	tp, rec := newTracer(t)
	c, err := queue.New("fleet", reconcile.Func[multicluster.Key](func(context.Context, multicluster.Key) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	c.Add(multicluster.Key{Cluster: "west", ObjectName: cache.ObjectName{Namespace: "ns", Name: "a"}})
	stop := startController(t, context.Background(), c)
	s := waitSpans(t, rec, 1)[0]
	require.NoError(t, stop())
	got := attrs(s.Attributes())
	assert.Equal(t, "west", got[tracing.AttrCluster].AsString())
	assert.Equal(t, "west/ns/a", got[tracing.AttrKey].AsString())
}

// Without WithTracing the controller records no trigger and its
// reconciles' contexts carry no span.
func TestTracingOff(t *testing.T) {
	var sawSpan, sawMark bool
	done := make(chan struct{})
	c, err := queue.New("off", reconcile.Func[string](func(ctx context.Context, _ string) (reconcile.Result, error) {
		sawSpan = tracing.Traceparent(ctx) != ""
		cm := &corev1.ConfigMap{}
		sawMark = tracing.SetAnnotation(ctx, cm)
		close(done)
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	assert.False(t, c.Tracing())
	assert.Nil(t, tracing.RecorderOf[string](c))
	c.Trigger("k", tracing.Trigger{Source: tracing.SourceChannel}) // ignored
	c.Add("k")
	stop := startController(t, context.Background(), c)
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("no reconcile")
	}
	require.NoError(t, stop())
	assert.False(t, sawSpan)
	assert.False(t, sawMark)

	_, err = queue.New("nil", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil }), queue.WithTracing(nil))
	assert.ErrorContains(t, err, "tracer provider is nil")
}
