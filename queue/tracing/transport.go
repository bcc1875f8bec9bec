package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
)

// Transport returns a wrapper of a client's transport, for
// rest.Config.Wrap: every request becomes a client span of tp, a child of
// the span in the request's context (the reconcile's, for the requests a
// reconcile makes with its context), and carries the W3C traceparent
// header, so that the API server's own spans, when it exports them, name
// the client span: as their parent for a user it trusts (system:masters,
// system:monitoring), as a link of a trace of their own otherwise (an
// operator's ServiceAccount; see docs/tracing.md). A write (any method
// but GET, HEAD and OPTIONS) marks the reconcile as one that wrote (see
// MarkWrite). Requests made outside a traced reconcile (the informers'
// lists and watches) get root spans as tp's sampler decides. Two kinds of
// requests are sent untraced, without a span or header, as they would be
// traces of their own every few seconds: those of Leases (leader election
// and shard membership renew theirs), always, and those of events made
// outside a span (an event recorder's posts), also when the client's host
// has a path before the API's (such as https://host/clusters/NAME). A nil
// tp (tracing off) returns a wrapper that returns the transport it is
// given, unchanged. It wraps any http.RoundTripper, as ExampleTransport
// shows, with tracing on or off:
//
//	client := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}
func Transport(tp trace.TracerProvider) func(http.RoundTripper) http.RoundTripper {
	if tp == nil {
		return func(rt http.RoundTripper) http.RoundTripper { return rt }
	}
	return func(rt http.RoundTripper) http.RoundTripper {
		return &marking{plain: rt, next: otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(propagation.TraceContext{}),
		)}
	}
}

// untraced reports whether req is sent without a span nor a traceparent
// header: a request of a Lease (leader election and shard membership renew
// theirs every few seconds), and a request of events made outside a span
// (an event recorder's sink posts them), which would otherwise each be a trace of
// their own, all the time, that says nothing about a reconcile. The API's
// path may come after a prefix of the host's (a proxy's, such as
// /clusters/NAME): every /api/ or /apis/ segment of the path is tried as
// its start.
func untraced(req *http.Request) bool {
	path := req.URL.Path
	for i := 0; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		rest := path[i:]
		if !strings.HasPrefix(rest, "/api/") && !strings.HasPrefix(rest, "/apis/") {
			continue
		}
		if strings.HasPrefix(rest, "/apis/coordination.k8s.io/") {
			return true
		}
		if isEvents(rest) && !trace.SpanContextFromContext(req.Context()).IsValid() {
			return true
		}
	}
	return false
}

// isEvents reports whether path is of the core or events.k8s.io events:
// /api/v1/events, /api/v1/namespaces/NS/events, with an event's name
// after either, or anything under /apis/events.k8s.io/.
func isEvents(path string) bool {
	if strings.HasPrefix(path, "/apis/events.k8s.io/") {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts[0] == "events" && len(parts) <= 2
}

// WrapConfig makes the clients of cfg trace their requests with tp (see
// Transport). It changes cfg; a nil tp leaves it as it is. Wrap the config
// before making the clients (ExampleWrapConfig):
//
//	cfg := &rest.Config{Host: apiServer.URL}
//	tracing.WrapConfig(cfg, tp) // what operator.Flags.RESTConfig does with tracing on
//	kube, err := kubernetes.NewForConfig(cfg)
func WrapConfig(cfg *rest.Config, tp trace.TracerProvider) {
	if tp != nil {
		cfg.Wrap(Transport(tp))
	}
}

// marking marks the reconcile of a write request's context, and sends
// the requests that are not traced (see untraced) through plain.
type marking struct{ next, plain http.RoundTripper }

func (m *marking) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWrite(req.Method) {
		MarkWrite(req.Context())
	}
	if untraced(req) {
		return m.plain.RoundTrip(req)
	}
	return m.next.RoundTrip(req)
}
