package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// newTracer returns a tracer provider that samples everything into the
// returned recorder.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// attrs returns the attributes of s by key.
func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// waitSpans waits until rec holds n ended spans and returns them.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	require.Eventually(t, func() bool { return len(rec.Ended()) >= n }, waitFor, time.Millisecond, "want %d spans", n)
	return rec.Ended()
}

// Each reconcile is a span that names the controller, the key, the
// attempt and how it ended.
func TestTracingSpanPerReconcile(t *testing.T) {
	tests := []struct {
		name    string
		results []func() (reconcile.Result, error)
		want    []map[attribute.Key]attribute.Value
		status  []codes.Code
	}{{
		name:    "success",
		results: []func() (reconcile.Result, error){ok},
		want: []map[attribute.Key]attribute.Value{{
			tracing.AttrResult: attribute.StringValue(tracing.ResultSuccess), tracing.AttrAttempt: attribute.IntValue(1),
			tracing.AttrRequeue: attribute.BoolValue(false), tracing.AttrWrote: attribute.BoolValue(false),
		}},
		status: []codes.Code{codes.Unset},
	}, {
		name:    "requeue after",
		results: []func() (reconcile.Result, error){func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Hour}, nil }},
		want: []map[attribute.Key]attribute.Value{{
			tracing.AttrResult: attribute.StringValue(tracing.ResultRequeueAfter), tracing.AttrRequeueAfter: attribute.StringValue("1h0m0s"),
			tracing.AttrRequeue: attribute.BoolValue(false),
		}},
		status: []codes.Code{codes.Unset},
	}, {
		name:    "error, retried, then success",
		results: []func() (reconcile.Result, error){fail("boom"), fail("boom"), ok},
		want: []map[attribute.Key]attribute.Value{
			{tracing.AttrResult: attribute.StringValue(tracing.ResultError), tracing.AttrRequeue: attribute.BoolValue(true), tracing.AttrAttempt: attribute.IntValue(1)},
			{tracing.AttrResult: attribute.StringValue(tracing.ResultError), tracing.AttrAttempt: attribute.IntValue(2), tracing.AttrTriggerSource: attribute.StringValue("retry")},
			{tracing.AttrResult: attribute.StringValue(tracing.ResultSuccess), tracing.AttrAttempt: attribute.IntValue(3)},
		},
		status: []codes.Code{codes.Error, codes.Error, codes.Unset},
	}, {
		name: "terminal",
		results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
			return reconcile.Result{}, reconcile.Terminal(errors.New("bad spec"))
		}},
		want: []map[attribute.Key]attribute.Value{{
			tracing.AttrResult: attribute.StringValue(tracing.ResultTerminal), tracing.AttrRequeue: attribute.BoolValue(false),
		}},
		status: []codes.Code{codes.Error},
	}, {
		name:    "panic",
		results: []func() (reconcile.Result, error){func() (reconcile.Result, error) { panic("oops") }},
		want: []map[attribute.Key]attribute.Value{{
			tracing.AttrResult: attribute.StringValue(tracing.ResultError), tracing.AttrRequeue: attribute.BoolValue(true),
		}},
		status: []codes.Code{codes.Error},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rec := newTracer(t)
			calls := 0
			c, err := queue.New("traced", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				r := tt.results[min(calls, len(tt.results)-1)]
				calls++
				return r()
			}), queue.WithTracing(tp), queue.WithRateLimiter(fastRetries()))
			require.NoError(t, err)
			c.Add("ns/a")
			stop := startController(t, context.Background(), c)
			spans := waitSpans(t, rec, len(tt.want))
			require.NoError(t, stop())
			for i, want := range tt.want {
				s := spans[i]
				assert.Equal(t, "Reconcile traced", s.Name())
				assert.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
				got := attrs(s.Attributes())
				assert.Equal(t, "traced", got[tracing.AttrController].AsString())
				assert.Equal(t, "ns/a", got[tracing.AttrKey].AsString())
				for k, v := range want {
					assert.Equal(t, v, got[k], "span %d attribute %s", i, k)
				}
				assert.Equal(t, tt.status[i], s.Status().Code, "span %d status", i)
				assert.False(t, s.Parent().IsValid(), "a reconcile span is a root")
			}
		})
	}
}

// fastRetries retries failed keys after a millisecond.
func fastRetries() workqueue.TypedRateLimiter[any] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Millisecond, time.Millisecond)
}

var _ trace.Tracer = nil
