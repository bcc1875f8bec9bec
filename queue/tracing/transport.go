package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
)

// Transport returns a wrapper of a client's transport, for
// rest.Config.Wrap: every request becomes a client span of tp, a child of
// the span in the request's context (the reconcile's, for the requests a
// reconcile makes with its context), and carries the W3C traceparent
// header, so that the API server's own spans join the trace when it
// exports them. A write (any method but GET, HEAD and OPTIONS) marks the
// reconcile as one that wrote (see MarkWrite). Requests made outside a
// traced reconcile (the informers' lists and watches) get root spans as
// tp's sampler decides. A nil tp returns nil, which Wrap ignores.
func Transport(tp trace.TracerProvider) func(http.RoundTripper) http.RoundTripper {
	if tp == nil {
		return nil
	}
	return func(rt http.RoundTripper) http.RoundTripper {
		return &marking{next: otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(propagation.TraceContext{}),
		)}
	}
}

// WrapConfig makes the clients of cfg trace their requests with tp (see
// Transport). It changes cfg; a nil tp leaves it as it is.
func WrapConfig(cfg *rest.Config, tp trace.TracerProvider) {
	if tp != nil {
		cfg.Wrap(Transport(tp))
	}
}

// marking marks the reconcile of a write request's context.
type marking struct{ next http.RoundTripper }

func (m *marking) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) {
		MarkWrite(req.Context())
	}
	return m.next.RoundTrip(req)
}
