package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// docs/tracing.md ("Sampling across objects") promises that under
// ParentBased(FollowLinks(root)), what the flags build, "a reconcile with
// a link to a sampled span is sampled", so that "a trace sampled where it
// started is kept whole across the objects it reaches". A key keeps only
// its first tracing.MaxTriggers triggers as links: when a key waiting
// for its turn (a slow reconcile, a backoff) collects that many triggers
// without a sampled link (status updates of owned objects, resyncs), the
// sampled write that then sets it off is not a link, the sampler never
// sees it, and the reconcile is decided by the root ratio: the sampled
// trace stops here.
func TestSampledWriteBeyondMaxTriggersStillSampled(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSampler(sdktrace.ParentBased(tracing.FollowLinks(sdktrace.NeverSample()))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ran := make(chan struct{}, 1)
	c, err := queue.New("test", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		ran <- struct{}{}
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	require.NoError(t, err)

	write := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	for range tracing.MaxTriggers {
		// Updates of an owned object whose annotation did not change: no link.
		c.Trigger("a", tracing.Trigger{Event: tracing.EventUpdate, Source: tracing.SourceOwner, Object: "ns/child"})
	}
	c.Trigger("a", tracing.Trigger{Event: tracing.EventUpdate, Source: tracing.SourceOwner, Object: "ns/child", Link: write})
	c.Add("a")
	stop := startController(t, context.Background(), c)
	defer func() { require.NoError(t, stop()) }()
	select {
	case <-ran:
	case <-time.After(waitFor):
		t.Fatal("no reconcile")
	}
	require.NoError(t, stop())
	assert.Len(t, rec.Ended(), 1, "the reconcile set off by a sampled write is sampled")
}
