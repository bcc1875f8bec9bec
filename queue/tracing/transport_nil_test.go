package tracing_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Transport's doc shows
//
//	client := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}
//
// for "any http.RoundTripper", with tp typically operator.Flags'
// TracerProvider, which is nil when tracing is off (no endpoint): the
// documented line must work then too, as WrapConfig does with a nil tp.
func TestTransportSnippetWithTracingOff(t *testing.T) {
	var tp trace.TracerProvider // what Flags.TracerProvider returns with tracing off
	assert.NotPanics(t, func() {
		client := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}
		_ = client
	})
}
