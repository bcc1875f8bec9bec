package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// refusingOwnership refuses the first claim of each key. With requeue it
// keeps the key (it still owns it, and queues it again shortly, as a
// sharded Fleet does while its shard refuses claims); without, the key
// is no longer owned from then on, until own is called.
type refusingOwnership struct {
	requeue bool
	mu      sync.Mutex
	q       queue.Enqueuer[string]
	refused map[string]bool
	lost    map[string]bool
	started chan struct{}
}

func (o *refusingOwnership) Start(ctx context.Context, q queue.Enqueuer[string]) {
	o.mu.Lock()
	o.q = q
	o.mu.Unlock()
	close(o.started)
	<-ctx.Done()
}

func (o *refusingOwnership) Owns(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.lost[key]
}

func (o *refusingOwnership) Claim(ctx context.Context, key string) (context.Context, func(), bool) {
	o.mu.Lock()
	refuse := o.lost[key] || !o.refused[key]
	requeue := !o.lost[key] && !o.refused[key] && o.requeue
	if !o.refused[key] {
		o.refused[key] = true
		o.lost[key] = !o.requeue
	}
	q := o.q
	o.mu.Unlock()
	if requeue {
		q.AddAfter(key, time.Millisecond)
	}
	if refuse {
		return nil, nil, false
	}
	return ctx, func() {}, true
}

func (o *refusingOwnership) own(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.lost, key)
}

// The triggers of a key whose claim is refused go to the reconcile that
// finally runs when the Ownership keeps the key, and are dropped with the
// key when it does not: a later reconcile of it names only its own.
func TestTracingTriggersOfARefusedKey(t *testing.T) {
	write := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	later := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{7, 8, 9}, SpanID: trace.SpanID{1, 1, 1}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	for _, tc := range []struct {
		name      string
		requeue   bool
		wantLinks []trace.SpanContext // of the channel's triggers
	}{
		{name: "kept and queued again", requeue: true, wantLinks: []trace.SpanContext{write}},
		{name: "dropped", requeue: false, wantLinks: []trace.SpanContext{later}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, rec := newTracer(t)
			c, err := queue.New("test", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}), queue.WithTracing(tp))
			require.NoError(t, err)
			o := &refusingOwnership{requeue: tc.requeue, refused: map[string]bool{}, lost: map[string]bool{}, started: make(chan struct{})}
			require.NoError(t, c.Restrict(o))
			stop := startController(t, context.Background(), c)
			defer func() { require.NoError(t, stop()) }()
			<-o.started

			c.Trigger("a", tracing.Trigger{Source: tracing.SourceChannel, Object: "a", Link: write})
			c.Add("a")
			if !tc.requeue {
				// The key is dropped at its turn, with its trigger; it
				// comes back later, set off by another write.
				require.Eventually(t, func() bool { return queue.PendingTriggers(c) == 0 }, waitFor, time.Millisecond)
				assert.Empty(t, rec.Ended(), "a refused key is not reconciled")
				o.own("a")
				c.Trigger("a", tracing.Trigger{Source: tracing.SourceChannel, Object: "a", Link: later})
				c.Add("a")
			}
			spans := waitSpans(t, rec, 1)
			var links []trace.SpanContext
			for _, l := range spans[0].Links() {
				if attrs(l.Attributes)[tracing.AttrTriggerSource].AsString() == string(tracing.SourceChannel) {
					links = append(links, l.SpanContext)
				}
			}
			assert.Equal(t, tc.wantLinks, links, "links: %v", spans[0].Links())
		})
	}
}
