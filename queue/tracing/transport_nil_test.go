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
// documented line then calls a nil function and panics, so a program
// written after the doc crashes unless tracing is on. WrapConfig copes
// with a nil tp; the plain-transport form does not.
func TestTransportSnippetWithTracingOff(t *testing.T) {
	var tp trace.TracerProvider // what Flags.TracerProvider returns with tracing off
	assert.NotPanics(t, func() {
		client := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}
		_ = client
	})
}
