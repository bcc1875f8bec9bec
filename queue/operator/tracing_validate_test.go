package operator

import (
	"bytes"
	"context"
	"log"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdlibLog captures what the standard library's logger writes (where the
// OpenTelemetry SDK reports the settings it cannot use) until the test
// ends.
func stdlibLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(out); log.SetFlags(flags) })
	return &buf
}

// Every tracing setting that cannot work is refused by Validate with an
// error naming it, as the other flags are, and by TracerProvider for a
// caller that skips Validate; none is left to a line of the standard
// library's log while the operator runs with another setting than the one
// given. Tracing flags given without an endpoint would be ignored, so they
// are refused too; OTEL_* variables without an endpoint are checked, and
// otherwise unused.
func TestTracingSettingsRefused(t *testing.T) {
	const endpoint = "http://127.0.0.1:1"
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		flags   Flags
		invalid string // "" for valid
	}{
		{name: "unknown sampler", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "alwayson"},
			invalid: `$OTEL_TRACES_SAMPLER "alwayson" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio`},
		{name: "sampler this operator does not build", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "jaeger_remote"},
			invalid: `$OTEL_TRACES_SAMPLER "jaeger_remote" is not one of`},
		{name: "sampler argument not a number", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
			invalid: `$OTEL_TRACES_SAMPLER_ARG "half" must be a ratio between 0 and 1`},
		{name: "sampler argument above 1", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
			invalid: `$OTEL_TRACES_SAMPLER_ARG "1.5" must be a ratio between 0 and 1`},
		{name: "sampler argument, padded", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": " TraceIdRatio ", "OTEL_TRACES_SAMPLER_ARG": " 0.5 "}},
		{name: "bad sampler without an endpoint", env: map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"},
			invalid: `$OTEL_TRACES_SAMPLER "sometimes" is not one of`},
		{name: "bad sampler, SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_SAMPLER": "sometimes"}},
		{name: "exporter zipkin", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "zipkin"},
			invalid: `$OTEL_TRACES_EXPORTER "zipkin": this operator exports traces over OTLP ("otlp", the default) or not at all ("none")`},
		{name: "exporter console without an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"},
			invalid: `$OTEL_TRACES_EXPORTER "console"`},
		{name: "exporter otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "OTLP"}},
		{name: "protocol grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			invalid: `$OTEL_EXPORTER_OTLP_PROTOCOL "grpc": this operator exports OTLP over HTTP in protobuf ("http/protobuf", the default)`},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}},
		{name: "endpoint flag, host:port", args: []string{"--tracing-endpoint=127.0.0.1:4318"},
			invalid: `--tracing-endpoint "127.0.0.1:4318" must be an http:// or https:// URL, such as http://otel-collector:4318`},
		{name: "endpoint variable, host:port", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			invalid: `$OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318" must be an http:// or https:// URL`},
		{name: "traces endpoint variable, host:port", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "10.0.0.1:4318"},
			invalid: `$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "10.0.0.1:4318" must be an http:// or https:// URL`},
		{name: "the flag wins over a bad endpoint variable", args: []string{"--tracing-endpoint=" + endpoint}, env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}},
		{name: "sampling ratio without an endpoint", args: []string{"--tracing-sampling-ratio=0.5"},
			invalid: "--tracing-sampling-ratio needs a trace endpoint: --tracing-endpoint, $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "drop-empty without an endpoint", args: []string{"--tracing-drop-empty"},
			invalid: "--tracing-drop-empty needs a trace endpoint"},
		{name: "drop-empty, endpoint variable", args: []string{"--tracing-drop-empty", "--tracing-sampling-ratio=0.5"}, env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint + "/v1/traces"}},
		{name: "defaults of the program without an endpoint", flags: Flags{TracingSamplingRatio: 0.1, TracingDropEmpty: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			logged := stdlibLog(t)
			f := parse(t, tt.flags, tt.args...)
			err := f.Validate()
			tp, tpErr := f.TracerProvider()
			if f.tracer != nil {
				defer func() {
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					defer cancel()
					_ = f.tracer.Shutdown(ctx)
				}()
			}
			assert.Empty(t, logged.String(), "the standard library's log")
			if tt.invalid == "" {
				require.NoError(t, err)
				require.NoError(t, tpErr)
				return
			}
			require.ErrorContains(t, err, tt.invalid)
			if f.TracingEnabled() {
				require.ErrorContains(t, tpErr, tt.invalid, "TracerProvider without Validate")
				assert.Nil(t, tp)
			}
		})
	}
}
