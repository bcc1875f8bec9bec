package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A value of $OTEL_RESOURCE_ATTRIBUTES that percent-decodes to bytes that
// are not UTF-8 (%ff, or a Latin-1 %e9 for é) cannot be exported: OTLP's
// string fields must be UTF-8, so the protobuf encoding of every batch
// fails, and the SDK reports it on the standard library's log while the
// operator runs without traces. The flags promise to refuse every value
// that cannot work rather than leave it to a log line: such a value is
// either refused by Validate, or its spans reach the collector.
func TestResourceValueNotUTF8(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=caf%e9")
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	logged := stdlibLog(t)
	f := parse(t, Flags{}, "--tracing-endpoint="+collector.URL)
	if err := f.Validate(); err != nil {
		return // refused: what the flags promise
	}
	tp, err := f.TracerProvider()
	require.NoError(t, err)
	sdk := tp.(*sdktrace.TracerProvider)
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "span")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	flushErr := sdk.ForceFlush(ctx)
	assert.NoError(t, flushErr, "the export of a span")
	assert.Positive(t, posts.Load(), "Validate accepted the variable, but no span reached the collector")
	assert.Empty(t, logged.String(), "the standard library's log")
}

// $OTEL_SERVICE_NAME that is not valid UTF-8 is refused as well, by
// Validate and TracerProvider, naming it: the SDK merges it into every
// resource, and no export could be encoded.
func TestServiceNameNotUTF8(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "caf\xe9")
	logged := stdlibLog(t)
	f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
	err := f.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$OTEL_SERVICE_NAME")
	assert.Contains(t, err.Error(), `OTEL_SERVICE_NAME=caf\xe9`)
	tp, err := f.TracerProvider()
	require.Error(t, err)
	assert.Nil(t, tp)
	assert.Empty(t, logged.String(), "the standard library's log")

	off := parse(t, Flags{})
	assert.NoError(t, off.Validate(), "a variable read only by tracing refused while tracing is off")
}
