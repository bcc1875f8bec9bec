// Package otlp is an OpenTelemetry trace receiver for tests. It speaks
// OTLP over gRPC (what kube-apiserver and the SDK's otlptracegrpc exporter
// send) and OTLP over HTTP with protobuf bodies (the otlptracehttp
// exporter), both in plain text on loopback ports of their own, and keeps
// every span it receives in memory, so that a test can wait for spans and
// put traces together from what a real export delivered.
//
//	r := otlp.StartT(t, otlp.Options{})
//	cp := controlplane.StartT(t, controlplane.Options{
//		Tracing: &controlplane.Tracing{Endpoint: r.GRPCAddr(), SamplingRatePerMillion: 1_000_000},
//	})
//	// make requests to cp, run an operator that exports to r.HTTPEndpoint(), then:
//	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
//	defer cancel()
//	span, err := r.WaitForSpan(ctx, otlp.Service("apiserver"), otlp.Kind(trace.SpanKindServer))
//	require.NoError(t, err)
//	t.Logf("its trace, with the traces linked to it:\n%s", r.LinkedTrace(span.TraceID))
//
// An operator's exporter takes r.HTTPEndpoint() as
// OTEL_EXPORTER_OTLP_ENDPOINT; the SDK's gRPC exporter takes r.GRPCAddr()
// with otlptracegrpc.WithEndpoint and WithInsecure.
//
// # Waiting
//
// Exporters send spans in batches, kube-apiserver's every five seconds,
// some time after the spans ended. The Wait methods check their condition
// once at the start and again after every batch that arrives, until it
// holds or their context ends; they never sleep. Give them a context with a
// deadline long enough for a loaded machine: a minute is plenty.
//
// # Traces and links
//
// Trace returns the spans of one trace ID; LinkedTrace adds every span of
// another trace that links to one of them or that one of them links to,
// transitively. kube-apiserver makes a request's span the child of the
// traceparent header it was sent only for members of system:masters and
// system:monitoring; for every other user it starts a new trace, linked to
// the header's span and sampled at its samplingRatePerMillion, so the API
// server's spans of an operator's requests are found through links.
//
// # What it does not do
//
// It accepts traces only (metrics and logs are refused as unimplemented),
// no JSON bodies on HTTP (415), and no TLS or authentication: it is for
// loopback in tests. It keeps at most Options.MaxSpans spans and counts
// the rest in Dropped.
package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // gRPC exporters may compress with gzip
	"google.golang.org/protobuf/proto"
)

// Protocol is the OTLP transport a span arrived by.
type Protocol string

const (
	// GRPC is OTLP/gRPC, the transport kube-apiserver exports with.
	GRPC Protocol = "grpc"
	// HTTP is OTLP/HTTP with a protobuf body (POST /v1/traces).
	HTTP Protocol = "http/protobuf"
)

// TracesPath is the path of OTLP/HTTP trace exports.
const TracesPath = "/v1/traces"

// DefaultMaxSpans is the default of Options.MaxSpans.
const DefaultMaxSpans = 200_000

// maxBodyBytes bounds an HTTP export's body, before and after gzip.
const maxBodyBytes = 64 << 20

// stopTimeout bounds how long Stop waits for exports in flight.
const stopTimeout = 5 * time.Second

// Options configures Start. The zero value is ready to use.
type Options struct {
	// MaxSpans bounds the spans kept in memory; spans received beyond it
	// are discarded and counted by Dropped (the export is still answered
	// with success). Zero means DefaultMaxSpans.
	MaxSpans int
}

// Receiver is a running OTLP trace receiver. Its methods are safe for
// concurrent use.
type Receiver struct {
	grpcLis  net.Listener
	httpLis  net.Listener
	grpcSrv  *grpc.Server
	httpSrv  *http.Server
	maxSpans int
	served   sync.WaitGroup // the two Serve goroutines

	stopOnce sync.Once

	mu      sync.Mutex // guards the fields below
	spans   []Span     // in order of arrival
	dropped int
	exports map[Protocol]int
	// changed is closed, and replaced by a new channel, whenever spans
	// arrive.
	changed chan struct{}
}

// Start listens on two free ports of 127.0.0.1, one for OTLP/gRPC and one
// for OTLP/HTTP, and serves them until Stop.
func Start(opts Options) (*Receiver, error) {
	if opts.MaxSpans < 0 {
		return nil, fmt.Errorf("otlp: MaxSpans %d is negative", opts.MaxSpans)
	}
	if opts.MaxSpans == 0 {
		opts.MaxSpans = DefaultMaxSpans
	}
	r := &Receiver{maxSpans: opts.MaxSpans, exports: map[Protocol]int{}, changed: make(chan struct{})}
	var err error
	if r.grpcLis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("otlp: listening for gRPC: %w", err)
	}
	if r.httpLis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		_ = r.grpcLis.Close()
		return nil, fmt.Errorf("otlp: listening for HTTP: %w", err)
	}
	r.grpcSrv = grpc.NewServer()
	collectortracepb.RegisterTraceServiceServer(r.grpcSrv, traceService{r: r})
	mux := http.NewServeMux()
	mux.HandleFunc(TracesPath, r.serveHTTP)
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	r.served.Add(2)
	go func() {
		defer r.served.Done()
		_ = r.grpcSrv.Serve(r.grpcLis)
	}()
	go func() {
		defer r.served.Done()
		_ = r.httpSrv.Serve(r.httpLis)
	}()
	return r, nil
}

// GRPCAddr is the host:port of the OTLP/gRPC endpoint (plain text): the
// endpoint of kube-apiserver's TracingConfiguration, or of
// otlptracegrpc.WithEndpoint with WithInsecure.
func (r *Receiver) GRPCAddr() string { return r.grpcLis.Addr().String() }

// HTTPAddr is the host:port of the OTLP/HTTP endpoint (plain text), as
// otlptracehttp.WithEndpoint with WithInsecure takes it.
func (r *Receiver) HTTPAddr() string { return r.httpLis.Addr().String() }

// HTTPEndpoint is the base URL of the OTLP/HTTP endpoint,
// http://127.0.0.1:<port>, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the
// exporter appends TracesPath).
func (r *Receiver) HTTPEndpoint() string { return "http://" + r.HTTPAddr() }

// HTTPTracesURL is the full URL trace exports are posted to, as
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT takes it.
func (r *Receiver) HTTPTracesURL() string { return r.HTTPEndpoint() + TracesPath }

// Stop stops accepting exports, waits up to five seconds for those in
// flight, then closes every connection and returns once both servers have
// stopped. The spans received stay readable. Stop is idempotent.
func (r *Receiver) Stop() {
	r.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		graceful := make(chan struct{})
		go func() {
			r.grpcSrv.GracefulStop()
			close(graceful)
		}()
		if err := r.httpSrv.Shutdown(ctx); err != nil {
			_ = r.httpSrv.Close()
		}
		select {
		case <-graceful:
		case <-ctx.Done():
			r.grpcSrv.Stop()
			<-graceful
		}
		r.served.Wait()
	})
}

// Spans returns the spans received so far that match all of matches
// (every span without any), in the order they arrived. The slice is the
// caller's; the spans' maps and slices are shared and must not be
// modified.
func (r *Receiver) Spans(matches ...Match) []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return filter(r.spans, matches)
}

// Dropped is the number of spans discarded because MaxSpans were kept
// already.
func (r *Receiver) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Exports is the number of export requests answered with success, by
// protocol.
func (r *Receiver) Exports(p Protocol) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports[p]
}

// Trace returns the spans received so far with the trace ID id.
func (r *Receiver) Trace(id TraceID) Trace {
	return newTrace(r.Spans(InTrace(id)))
}

// LinkedTrace returns the spans of the trace id together with the spans of
// every trace connected to it by links in either direction: a span of
// another trace that links to a span here brings in its whole trace, and
// so does a span here that links to a span of another trace; the
// connection is followed transitively.
func (r *Receiver) LinkedTrace(id TraceID) Trace {
	return newTrace(linkedClosure(r.Spans(), id))
}

// WaitForSpan waits until a span matching all of matches has arrived and
// returns the first such span. It fails when ctx ends, with an error that
// says how many spans arrived and names a few of them.
func (r *Receiver) WaitForSpan(ctx context.Context, matches ...Match) (Span, error) {
	spans, err := r.WaitForSpans(ctx, 1, matches...)
	if err != nil {
		return Span{}, err
	}
	return spans[0], nil
}

// WaitForSpans waits until at least n spans matching all of matches have
// arrived and returns all of those (possibly more than n), in the order of
// arrival. It fails when ctx ends.
func (r *Receiver) WaitForSpans(ctx context.Context, n int, matches ...Match) ([]Span, error) {
	var got []Span
	err := r.wait(ctx, func() bool {
		got = r.Spans(matches...)
		return len(got) >= n
	})
	if err != nil {
		return nil, fmt.Errorf("otlp: waiting for %d matching spans, %d matched: %w\n%s", n, len(got), err, r.summary())
	}
	return got, nil
}

// WaitForTrace waits until cond holds for the trace id and returns it: the
// trace with its linked traces (as LinkedTrace) when linked is true, the
// spans of the trace ID alone (as Trace) otherwise. It fails when ctx
// ends, with the trace as it was then.
func (r *Receiver) WaitForTrace(ctx context.Context, id TraceID, linked bool, cond func(Trace) bool) (Trace, error) {
	var tr Trace
	err := r.wait(ctx, func() bool {
		if linked {
			tr = r.LinkedTrace(id)
		} else {
			tr = r.Trace(id)
		}
		return cond(tr)
	})
	if err != nil {
		return tr, fmt.Errorf("otlp: waiting for trace %s: %w; it has:\n%s", id, err, tr)
	}
	return tr, nil
}

// wait checks cond now and after every arrival of spans until it holds or
// ctx ends.
func (r *Receiver) wait(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// summary names the number of spans received and the last few.
func (r *Receiver) summary() string {
	spans := r.Spans()
	const last = 20
	s := fmt.Sprintf("%d spans received (%d dropped)", len(spans), r.Dropped())
	if len(spans) > last {
		s += fmt.Sprintf(", the last %d:", last)
		spans = spans[len(spans)-last:]
	} else if len(spans) > 0 {
		s += ":"
	}
	for _, sp := range spans {
		s += "\n  " + sp.String()
	}
	return s
}

// add stores the spans of one export.
func (r *Receiver) add(p Protocol, req *collectortracepb.ExportTraceServiceRequest) {
	spans := convert(p, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports[p]++
	room := max(r.maxSpans-len(r.spans), 0)
	if len(spans) > room {
		r.dropped += len(spans) - room
		spans = spans[:room]
	}
	if len(spans) == 0 {
		return
	}
	r.spans = append(r.spans, spans...)
	close(r.changed)
	r.changed = make(chan struct{})
}

// traceService is the gRPC side.
type traceService struct {
	collectortracepb.UnimplementedTraceServiceServer
	r *Receiver
}

// Export stores the spans of one gRPC export.
func (s traceService) Export(_ context.Context, req *collectortracepb.ExportTraceServiceRequest) (*collectortracepb.ExportTraceServiceResponse, error) {
	s.r.add(GRPC, req)
	return &collectortracepb.ExportTraceServiceResponse{}, nil
}

// serveHTTP stores the spans of one OTLP/HTTP export: a POST with a
// protobuf ExportTraceServiceRequest, gzip-compressed or not.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP exports are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/x-protobuf" {
			http.Error(w, "only application/x-protobuf bodies are accepted", http.StatusUnsupportedMediaType)
			return
		}
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBodyBytes)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxBodyBytes+1)
	default:
		http.Error(w, "unsupported Content-Encoding "+enc, http.StatusUnsupportedMediaType)
		return
	}
	data, err := io.ReadAll(body)
	if err == nil && len(data) > maxBodyBytes {
		err = errors.New("body too large")
	}
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var export collectortracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.add(HTTP, &export)
	resp, err := proto.Marshal(&collectortracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// filter returns copies of the spans that match all of matches.
func filter(spans []Span, matches []Match) []Span {
	out := make([]Span, 0, len(spans))
	for _, s := range spans {
		if matchAll(s, matches) {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}

func matchAll(s Span, matches []Match) bool {
	for _, m := range matches {
		if !m(s) {
			return false
		}
	}
	return true
}
