package operator

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// TracerShutdownTimeout bounds how long Run waits for the spans left to
// be exported when it shuts the tracer provider of WithTracerProvider down.
const TracerShutdownTimeout = 5 * time.Second

// TracingEnabled reports whether the operator traces: --tracing-endpoint
// is set, or $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// $OTEL_EXPORTER_OTLP_ENDPOINT is, unless $OTEL_SDK_DISABLED is "true" or
// $OTEL_TRACES_EXPORTER is "none".
func (f *Flags) TracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return f.TracingEndpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// TracerProvider returns the operator's tracer provider when tracing is
// enabled (see TracingEnabled), and nil otherwise. The first call makes
// it: an OpenTelemetry SDK provider that exports over OTLP/HTTP (protobuf)
// to --tracing-endpoint, or where the standard OTEL_EXPORTER_OTLP_*
// variables say (with their headers, timeout and TLS settings), in
// batches; that samples with
// sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(ratio)))
// at --tracing-sampling-ratio, or, without the flag, with the sampler
// $OTEL_TRACES_SAMPLER names as the OpenTelemetry specification defines
// it (see envSampler); that drops the spans of reconciles that
// wrote nothing with --tracing-drop-empty (tracing.DropEmpty); and whose
// resource has service.name from $OTEL_SERVICE_NAME (else the binary's
// name) and $OTEL_RESOURCE_ATTRIBUTES. RESTConfig's transport,
// ControllerOptions and Options use it; Run, given Options, shuts it down
// after the controllers and informers stopped, which exports what is left.
// It is never made the global provider of otel.
func (f *Flags) TracerProvider() (trace.TracerProvider, error) {
	if !f.TracingEnabled() {
		return nil, nil
	}
	if f.tracer == nil && f.tracerErr == nil {
		f.tracer, f.tracerErr = f.newTracerProvider(context.Background())
	}
	if f.tracerErr != nil {
		return nil, f.tracerErr
	}
	return f.tracer, nil
}

func (f *Flags) newTracerProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	if f.TracingEndpoint != "" {
		u, err := tracingURL(f.TracingEndpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("operator: the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", filepath.Base(os.Args[0]))),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		// A resource with some attributes left out still serves.
		res = resource.Default()
	}
	ratio := f.TracingSamplingRatio
	var processor sdktrace.SpanProcessor = sdktrace.NewBatchSpanProcessor(exporter)
	if f.TracingDropEmpty {
		processor = tracing.DropEmpty(processor)
	}
	sampler := sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(ratio)))
	if f.samplerFromEnv {
		sampler = envSampler(ratio)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
		sdktrace.WithSpanProcessor(processor),
	), nil
}

// tracingURL returns the URL of --tracing-endpoint that the exporter
// posts to: /v1/traces is added to a URL without a path.
func tracingURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("--tracing-endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--tracing-endpoint %q must be an http:// or https:// URL, such as http://otel-collector:4318", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// defaultSamplingRatio is the ratio that $OTEL_TRACES_SAMPLER and
// $OTEL_TRACES_SAMPLER_ARG name for the traces the operator starts:
// always_on (and parentbased_always_on, the default) 1, always_off 0,
// traceidratio its argument (default 1), with or without the
// parentbased_ prefix. What the sampler does with parents and links is
// envSampler's.
func defaultSamplingRatio() float64 {
	switch strings.TrimPrefix(samplerName(), "parentbased_") {
	case "always_off":
		return 0
	case "traceidratio":
		if r, err := strconv.ParseFloat(os.Getenv("OTEL_TRACES_SAMPLER_ARG"), 64); err == nil && r >= 0 && r <= 1 {
			return r
		}
	}
	return 1
}

// samplerName is $OTEL_TRACES_SAMPLER, whose values are not case
// sensitive.
func samplerName() string {
	return strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")))
}

// envSampler is the sampler $OTEL_TRACES_SAMPLER names, as the
// OpenTelemetry specification defines them, at ratio (from
// $OTEL_TRACES_SAMPLER_ARG): always_on samples every span, always_off
// none, traceidratio decides by the trace ID alone, whatever the parent
// or links; the parentbased_ ones (parentbased_always_on, the default,
// parentbased_always_off, parentbased_traceidratio) follow a parent, and,
// as this library documents, links (tracing.FollowLinks), and decide
// roots at their ratio. Names it does not know are the default.
func envSampler(ratio float64) sdktrace.Sampler {
	switch samplerName() {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio)
	}
	return sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(ratio)))
}

// ratioFlag is --tracing-sampling-ratio: a float64 that, once given,
// takes the sampling from $OTEL_TRACES_SAMPLER.
type ratioFlag struct{ f *Flags }

// String implements flag.Value.
func (r ratioFlag) String() string {
	if r.f == nil {
		return "0"
	}
	return strconv.FormatFloat(r.f.TracingSamplingRatio, 'g', -1, 64)
}

// Set implements flag.Value.
func (r ratioFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("parse error: %w", err)
	}
	r.f.TracingSamplingRatio = v
	r.f.samplerFromEnv = false
	return nil
}

// validateTracing reports tracing flag values that cannot work.
func (f *Flags) validateTracing() []error {
	var errs []error
	if f.TracingEndpoint != "" {
		if _, err := tracingURL(f.TracingEndpoint); err != nil {
			errs = append(errs, err)
		}
	}
	if f.TracingSamplingRatio < 0 || f.TracingSamplingRatio > 1 {
		errs = append(errs, fmt.Errorf("--tracing-sampling-ratio must be between 0 and 1, got %v", f.TracingSamplingRatio))
	}
	return errs
}

// WithTracerProvider makes Run shut tp down once the controllers and the
// informers have stopped, which exports the spans it still holds, waiting
// at most TracerShutdownTimeout. Run does so on every return, also when it
// fails its option checks before starting anything. Flags.Options gives it for
// Flags.TracerProvider.
func WithTracerProvider(tp interface{ Shutdown(context.Context) error }) Option {
	return func(c *config) {
		if tp == nil {
			c.errs = append(c.errs, errors.New("tracer provider is nil"))
			return
		}
		c.tracer = tp
	}
}
