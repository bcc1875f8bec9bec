package queue_test

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Every string the queue puts into a span (its name, the key, the
// triggers, the error's text in the status and the exception event) is
// valid UTF-8, whatever bytes the key, the trigger or the error hold:
// OTLP's strings must be UTF-8, and one that is not makes the whole
// export batch fail.
func TestTracingSpanStringsAreUTF8(t *testing.T) {
	tp, rec := newTracer(t)
	c, err := queue.New("test\xff", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, reconcile.Terminal(errors.New("bucket refused: \xff\xfe"))
	}), queue.WithTracing(tp))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	defer func() { require.NoError(t, stop()) }()
	c.Trigger("key\xfe", tracing.Trigger{Source: tracing.SourceChannel, Object: "ns/o\xff", ResourceVersion: "1\xff"})
	c.Add("key\xfe")
	span := waitSpans(t, rec, 1)[0]

	valid := func(what string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			if kv.Value.Type() == attribute.STRING {
				assert.True(t, utf8.ValidString(kv.Value.AsString()), "%s %s: %q", what, kv.Key, kv.Value.AsString())
			}
		}
	}
	assert.True(t, utf8.ValidString(span.Name()), "name %q", span.Name())
	valid("attribute", span.Attributes())
	for _, l := range span.Links() {
		valid("link", l.Attributes)
	}
	assert.Equal(t, codes.Error, span.Status().Code)
	assert.Equal(t, "terminal error: bucket refused: \uFFFD", span.Status().Description)
	var exception bool
	for _, e := range span.Events() {
		valid("event "+e.Name, e.Attributes)
		if e.Name == "exception" {
			exception = true
			assert.Equal(t, "terminal error: bucket refused: \uFFFD", attrs(e.Attributes)["exception.message"].AsString())
			assert.NotEmpty(t, attrs(e.Attributes)["exception.type"].AsString())
		}
	}
	assert.True(t, exception, "the exception event: %v", span.Events())
	assert.Equal(t, "key\uFFFD", attrs(span.Attributes())[tracing.AttrKey].AsString())
	assert.Equal(t, "ns/o\uFFFD", attrs(span.Attributes())[tracing.AttrTriggerObject].AsString())
}
