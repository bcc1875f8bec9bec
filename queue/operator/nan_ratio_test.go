package operator

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// the sampling ratio must be between 0 and 1 (the flag's doc, and
// the specification for $OTEL_TRACES_SAMPLER_ARG of a traceidratio
// sampler), and Validate "refuses every value that cannot work". NaN
// parses as a float and passes both range checks (every comparison with
// NaN is false), so it is accepted; sdktrace.TraceIDRatioBased(NaN) then
// converts NaN to an integer bound, which Go leaves to the platform
// (everything sampled on amd64, nothing on arm64).
func TestNaNSamplingRatioRefused(t *testing.T) {
	t.Run("flag", func(t *testing.T) {
		clearOTelEnv(t)
		f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1", "--tracing-sampling-ratio=NaN")
		assert.ErrorContains(t, f.Validate(), "--tracing-sampling-ratio must be between 0 and 1")
	})
	t.Run("OTEL_TRACES_SAMPLER_ARG", func(t *testing.T) {
		clearOTelEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", "NaN")
		f := parse(t, Flags{})
		assert.ErrorContains(t, f.Validate(), "OTEL_TRACES_SAMPLER_ARG")
	})
}

// TestNaNQPSRefused: --kube-api-qps must be positive, and NaN, which no
// comparison refuses, is not.
func TestNaNQPSRefused(t *testing.T) {
	clearOTelEnv(t)
	f := parse(t, Flags{}, "--kube-api-qps=NaN")
	assert.ErrorContains(t, f.Validate(), "--kube-api-qps and --kube-api-burst must be positive")
}
