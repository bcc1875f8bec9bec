package tracing_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// A tracer provider for controllers: reconciles set off by a sampled write
// are sampled, a tenth of the others are, and the spans of reconciles that
// wrote nothing are dropped. Its clients' requests join the reconciles'
// traces.
func Example() {
	exporter := tracetest.NewInMemoryExporter() // otlptracehttp.New(ctx) in an operator
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(0.1)))),
		sdktrace.WithSpanProcessor(tracing.DropEmpty(sdktrace.NewBatchSpanProcessor(exporter))),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()

	cfg := &rest.Config{Host: "https://kubernetes.default.svc"}
	tracing.WrapConfig(cfg, tp)
	fmt.Println(cfg.WrapTransport != nil)
	// Output: true
}

// A sampler that follows links, and a processor that drops the spans of
// reconciles that wrote nothing.
func ExampleFollowLinks() {
	exporter := tracetest.NewInMemoryExporter()
	sampler := sdktrace.ParentBased(tracing.FollowLinks(sdktrace.TraceIDRatioBased(0.1)))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		sdktrace.WithSpanProcessor(tracing.DropEmpty(sdktrace.NewBatchSpanProcessor(exporter))),
	)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	fmt.Println(sampler.Description())
	// Output: ParentBased{root:FollowLinks{TraceIDRatioBased{0.1}},remoteParentSampled:AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,localParentNotSampled:AlwaysOffSampler}
}
