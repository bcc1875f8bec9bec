package multicluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// A key of a cluster that is not ready yet is held by the Fleet when its
// turn comes (its claim is refused) and queued again once the cluster is
// ready: its triggers go with it to the reconcile they set off, which
// names them and links to the write that caused it.
func TestTracingHeldKeyKeepsItsTriggers(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	c := newClusters("a")
	r := newRecorder()
	f := startFleetWith(t, c, r.copyCluster, []queue.Option{queue.WithWorkers(2), queue.WithTracing(tp)})

	// Member a joins; its engagement waits.
	hold := make(chan struct{})
	f.clusters.mu.Lock()
	f.clusters.hold["a"] = hold
	f.clusters.mu.Unlock()
	f.members.Set("a", f.clusters.config("a"))
	f.members.Synced()
	require.Eventually(t, func() bool { return len(f.fleet.Clusters()) == 1 }, waitFor, time.Millisecond)

	k := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "direct")}
	write := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3},
		SpanID:     trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})
	// A source records its trigger and adds the key, as every source does.
	f.ctrl.Trigger(k, tracing.Trigger{Source: tracing.SourceChannel, Object: "app/direct", Link: write})
	f.ctrl.Add(k)
	// The key's turn comes while a is not ready: it is held by the Fleet.
	require.Eventually(t, func() bool { return f.ctrl.Len() == 0 }, waitFor, time.Millisecond)
	require.Zero(t, r.count(k), "reconciled before its cluster was ready")

	close(hold)
	require.Eventually(t, func() bool { return r.count(k) > 0 }, waitFor, time.Millisecond)
	var span sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range sr.Ended() {
			for _, a := range s.Attributes() {
				if a.Key == tracing.AttrKey && a.Value.AsString() == k.String() {
					span = s
					return true
				}
			}
		}
		return false
	}, waitFor, time.Millisecond)
	var triggers int64 = -1
	for _, a := range span.Attributes() {
		if a.Key == tracing.AttrTriggers {
			triggers = a.Value.AsInt64()
		}
	}
	assert.Equal(t, int64(1), triggers, "the reconcile of the held key names the trigger that set it off")
	linked := false
	for _, l := range span.Links() {
		linked = linked || l.SpanContext.Equal(write)
	}
	assert.True(t, linked, "the reconcile of the held key links to the write that set it off; links: %v", span.Links())
}
