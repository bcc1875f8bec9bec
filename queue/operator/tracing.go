package operator

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// TracerShutdownTimeout bounds how long Run waits for the spans left to
// be exported when it shuts the tracer provider of WithTracerProvider down.
const TracerShutdownTimeout = 5 * time.Second

// TracingEnabled reports whether the operator traces: --tracing-endpoint
// is set, or $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// $OTEL_EXPORTER_OTLP_ENDPOINT is, unless $OTEL_SDK_DISABLED is "true" or
// $OTEL_TRACES_EXPORTER is "none" (in any case). Without an endpoint
// tracing is off, unlike an OpenTelemetry SDK left to its defaults, which
// would export to localhost.
func (f *Flags) TracingEnabled() bool {
	if sdkDisabled() || tracesExporter() == "none" {
		return false
	}
	return f.hasEndpoint()
}

// hasEndpoint reports whether a trace endpoint is given, by the flag or
// by a variable.
func (f *Flags) hasEndpoint() bool {
	return f.TracingEndpoint != "" || os.Getenv(envTracesEndpoint) != "" || os.Getenv(envEndpoint) != ""
}

// The OTEL_* variables the flags read.
const (
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSamplerName    = "OTEL_TRACES_SAMPLER"
	envSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envResourceAttrs  = "OTEL_RESOURCE_ATTRIBUTES"
	envServiceName    = "OTEL_SERVICE_NAME"
)

// sdkDisabled reports whether $OTEL_SDK_DISABLED is "true" (in any case):
// then no OTEL_* variable is read.
func sdkDisabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv(envSDKDisabled)), "true")
}

// tracesExporter is $OTEL_TRACES_EXPORTER, whose values are not case
// sensitive.
func tracesExporter() string {
	return strings.ToLower(strings.TrimSpace(os.Getenv(envExporter)))
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
// name) and $OTEL_RESOURCE_ATTRIBUTES. It fails, as Validate does, on
// the OTEL_* values it cannot use ($OTEL_TRACES_EXPORTER other than otlp
// or none, a sampler or sampler argument envSampler cannot build, an
// endpoint variable that is not an http:// or https:// URL, an entry of
// $OTEL_RESOURCE_ATTRIBUTES that is not key=value with its value
// percent-encoded, or whose key is percent-encoded) instead of
// letting the SDK log them and go on with its defaults. RESTConfig's transport,
// ControllerOptions and Options use it; Run, given Options, shuts it down
// after the controllers and informers stopped, which exports what is left.
// It is never made the global provider of otel.
func (f *Flags) TracerProvider() (trace.TracerProvider, error) {
	if !f.TracingEnabled() {
		return nil, nil
	}
	if f.tracer == nil && f.tracerErr == nil {
		if errs := f.envErrors(); len(errs) > 0 {
			// Checked first: the SDK would log what it cannot use, and
			// go on with its defaults.
			f.tracerErr = fmt.Errorf("operator: %w", errors.Join(errs...))
		} else {
			f.tracer, f.tracerErr = f.newTracerProvider(context.Background())
		}
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
	// The SDK merges the variables into the resource too (envErrors
	// refused what it would read otherwise): they are given here as well
	// so that they win over the default service.name.
	envAttrs, _ := envResourceAttributes()
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", strings.ToValidUTF8(filepath.Base(os.Args[0]), "\uFFFD"))),
		resource.WithAttributes(envAttrs...),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Tracing resource: using the SDK's default")
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

// envResourceAttributes returns the resource attributes that
// $OTEL_RESOURCE_ATTRIBUTES (key=value entries separated by commas, the
// values percent-encoded) and $OTEL_SERVICE_NAME give, the latter last so
// that its service.name wins, and what of them cannot be used: entries of
// the former without "=", with an empty key, with a key holding a %XX
// escape (a percent sign followed by two hex digits: the SDK, which merges
// the variable into every resource, would keep such a key undecoded; a
// percent sign that starts no such escape is kept in the key as it is),
// with a value that does not percent-decode, or with a key or decoded
// value that is not valid UTF-8 (OTLP's strings must be UTF-8: the
// encoding of every export would fail); and $OTEL_SERVICE_NAME, named as
// "OTEL_SERVICE_NAME=" and its value, when it is not valid UTF-8.
func envResourceAttributes() (attrs []attribute.KeyValue, bad []string) {
	if s := strings.TrimSpace(os.Getenv(envResourceAttrs)); s != "" {
		for _, entry := range strings.Split(s, ",") {
			k, v, found := strings.Cut(entry, "=")
			key := strings.TrimSpace(k)
			val, err := url.PathUnescape(strings.TrimSpace(v))
			if !found || key == "" || hasPercentEscape(key) || err != nil ||
				!utf8.ValidString(key) || !utf8.ValidString(val) {
				bad = append(bad, entry)
				continue
			}
			attrs = append(attrs, attribute.String(key, val))
		}
	}
	if name := strings.TrimSpace(os.Getenv(envServiceName)); name != "" {
		if !utf8.ValidString(name) {
			bad = append(bad, envServiceName+"="+os.Getenv(envServiceName))
		} else {
			attrs = append(attrs, attribute.String("service.name", name))
		}
	}
	return attrs, bad
}

// hasPercentEscape reports whether s holds a %XX escape: a percent sign
// followed by two hex digits.
func hasPercentEscape(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '%' && isHex(s[i+1]) && isHex(s[i+2]) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// tracingURL returns the URL of --tracing-endpoint that the exporter
// posts to: /v1/traces is added to the URL's path, as the exporter does
// for $OTEL_EXPORTER_OTLP_ENDPOINT (http://gw/otlp posts to
// http://gw/otlp/v1/traces), unless the path already ends with
// /v1/traces (a full traces URL, as $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// takes, is used as it is).
func tracingURL(endpoint string) (string, error) {
	u, err := endpointURL("--tracing-endpoint", endpoint)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1/traces") {
		u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
		u.RawPath = ""
	}
	return u.String(), nil
}

// endpointURL parses the endpoint that name (a flag or a variable) gives:
// an http:// or https:// URL with a host, as the OpenTelemetry
// specification has OTLP/HTTP endpoints. A host:port alone is refused: it
// does not say whether to use TLS.
func endpointURL(name, endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q must be an http:// or https:// URL, such as http://otel-collector:4318 (OTLP/HTTP; a host:port alone does not say whether to use TLS)", name, endpoint)
	}
	return u, nil
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
		if r, err := samplerArg(); err == nil {
			return r
		}
	}
	return 1
}

// samplerArg is the ratio $OTEL_TRACES_SAMPLER_ARG gives, 1 when it is
// not set, or an error when it is not a number between 0 and 1 (NaN
// included).
func samplerArg() (float64, error) {
	arg := strings.TrimSpace(os.Getenv(envSamplerArg))
	if arg == "" {
		return 1, nil
	}
	r, err := strconv.ParseFloat(arg, 64)
	if err != nil || !validRatio(r) {
		return 0, fmt.Errorf("$%s %q must be a ratio between 0 and 1 with $%s=%s", envSamplerArg, arg, envSamplerName, samplerName())
	}
	return r, nil
}

// validRatio reports whether r is a sampling ratio: between 0 and 1, and
// not NaN (which every comparison would let through, and which
// sdktrace.TraceIDRatioBased would turn into a bound the platform
// decides).
func validRatio(r float64) bool {
	return r >= 0 && r <= 1
}

// samplerNames are the values of $OTEL_TRACES_SAMPLER that envSampler
// builds.
var samplerNames = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// samplerName is $OTEL_TRACES_SAMPLER, whose values are not case
// sensitive.
func samplerName() string {
	return strings.ToLower(strings.TrimSpace(os.Getenv(envSamplerName)))
}

// envSampler is the sampler $OTEL_TRACES_SAMPLER names, as the
// OpenTelemetry specification defines them, at ratio (from
// $OTEL_TRACES_SAMPLER_ARG): always_on samples every span, always_off
// none, traceidratio decides by the trace ID alone, whatever the parent
// or links; the parentbased_ ones (parentbased_always_on, the default,
// parentbased_always_off, parentbased_traceidratio) follow a parent, and,
// as this library documents, links (tracing.FollowLinks), and decide
// roots at their ratio. An empty name is the default; envErrors refuses
// the names not in samplerNames.
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
	r.f.ratioGiven = true
	return nil
}

// dropEmptyFlag is --tracing-drop-empty: a bool that remembers it was
// given, so that Validate refuses it without an endpoint.
type dropEmptyFlag struct{ f *Flags }

// IsBoolFlag makes the flag take no value.
func (d dropEmptyFlag) IsBoolFlag() bool { return true }

// String implements flag.Value.
func (d dropEmptyFlag) String() string {
	if d.f == nil {
		return "false"
	}
	return strconv.FormatBool(d.f.TracingDropEmpty)
}

// Set implements flag.Value.
func (d dropEmptyFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("parse error: %w", err)
	}
	d.f.TracingDropEmpty = v
	d.f.dropEmptyGiven = v
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
	if !validRatio(f.TracingSamplingRatio) {
		errs = append(errs, fmt.Errorf("--tracing-sampling-ratio must be between 0 and 1, got %v", f.TracingSamplingRatio))
	}
	// Without an endpoint tracing is off: a tracing flag given on the
	// command line would be ignored. (Defaults set in the struct before
	// Bind are the program's, for when tracing is turned on.)
	if !f.hasEndpoint() {
		for _, given := range []struct {
			flag string
			set  bool
		}{{"--tracing-sampling-ratio", f.ratioGiven}, {"--tracing-drop-empty", f.dropEmptyGiven}} {
			if given.set {
				errs = append(errs, fmt.Errorf("%s needs a trace endpoint: --tracing-endpoint, $%s or $%s (without one, tracing is off)", given.flag, envTracesEndpoint, envEndpoint))
			}
		}
	}
	return append(errs, f.envErrors()...)
}

// envErrors reports the OTEL_* variables that the flags cannot use, unless
// $OTEL_SDK_DISABLED is "true": an exporter other than otlp or none, a
// sampler envSampler does not build or a sampler argument that is not a
// ratio, an OTLP protocol other than http/protobuf (in any case), an endpoint
// variable that the flags would use (no
// --tracing-endpoint) that is not an http:// or https:// URL, and, when
// tracing is on, entries of $OTEL_RESOURCE_ATTRIBUTES that
// envResourceAttributes cannot use.
func (f *Flags) envErrors() []error {
	if sdkDisabled() {
		return nil
	}
	var errs []error
	if e := tracesExporter(); e != "" && e != "otlp" && e != "none" {
		errs = append(errs, fmt.Errorf("$%s %q: this operator exports traces over OTLP (\"otlp\", the default) or not at all (\"none\")", envExporter, os.Getenv(envExporter)))
	}
	if name := samplerName(); name != "" {
		if !slices.Contains(samplerNames, name) {
			errs = append(errs, fmt.Errorf("$%s %q is not one of %s", envSamplerName, os.Getenv(envSamplerName), strings.Join(samplerNames, ", ")))
		} else if strings.HasSuffix(name, "traceidratio") {
			if _, err := samplerArg(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// The variable of the traces wins over the general one, as the
	// exporter reads them. Its values are not case sensitive.
	for _, name := range []string{envTracesProtocol, envProtocol} {
		if v := os.Getenv(name); v != "" {
			if strings.ToLower(strings.TrimSpace(v)) != "http/protobuf" {
				errs = append(errs, fmt.Errorf("$%s %q: this operator exports OTLP over HTTP in protobuf (\"http/protobuf\", the default), as --tracing-endpoint does", name, v))
			}
			break
		}
	}
	if f.TracingEnabled() {
		if _, bad := envResourceAttributes(); len(bad) > 0 {
			errs = append(errs, fmt.Errorf("$%s, $%s: entries that are not key=value, with a key of UTF-8 holding no %%XX escape and a value that percent-decodes to UTF-8: %q", envResourceAttrs, envServiceName, bad))
		}
	}
	if f.TracingEndpoint == "" {
		for _, name := range []string{envTracesEndpoint, envEndpoint} {
			if v := os.Getenv(name); v != "" {
				if _, err := endpointURL("$"+name, v); err != nil {
					errs = append(errs, err)
				}
				break
			}
		}
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
