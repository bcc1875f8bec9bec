package controlplane

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Tracing runs kube-apiserver with OpenTelemetry tracing: it exports the
// spans of the requests it serves over OTLP/gRPC, in plain text, to an endpoint the test
// provides, such as an otlp.Receiver's GRPCAddr. It is written as an
// apiserver.config.k8s.io/v1 TracingConfiguration and passed with
// --tracing-config-file.
//
// The API server samples with a parent-based sampler. A request carrying a
// sampled W3C traceparent header from a member of system:masters (AdminUser,
// KwokUser) or system:monitoring gets a span that is the child of the
// header's span, whatever the rate. Every other user's request, with a
// header or without, starts a trace of its own, sampled at
// SamplingRatePerMillion; the header's span, if any, becomes a link of the
// request's span. An operator running as a ServiceAccount therefore needs
// a rate of 1,000,000 to have each of its requests traced.
type Tracing struct {
	// Endpoint is the host:port of the OTLP/gRPC receiver. Required.
	Endpoint string
	// SamplingRatePerMillion is how many of a million requests that are not
	// the child of a sampled span from a privileged user are traced: 0 (only
	// those children) to 1,000,000 (every request).
	SamplingRatePerMillion int32
}

// maxSamplingRatePerMillion is the API server's upper bound of the rate.
const maxSamplingRatePerMillion = 1_000_000

// validate reports what the API server would refuse.
func (t *Tracing) validate() error {
	if t.Endpoint == "" {
		return errors.New("tracing: Endpoint is required")
	}
	if t.SamplingRatePerMillion < 0 || t.SamplingRatePerMillion > maxSamplingRatePerMillion {
		return fmt.Errorf("tracing: SamplingRatePerMillion %d is not within 0 and %d", t.SamplingRatePerMillion, maxSamplingRatePerMillion)
	}
	return nil
}

// writeTracingConfig writes the TracingConfiguration file of kube-apiserver.
func writeTracingConfig(path string, t *Tracing) error {
	config := "apiVersion: apiserver.config.k8s.io/v1\n" +
		"kind: TracingConfiguration\n" +
		"endpoint: " + strconv.Quote(t.Endpoint) + "\n" +
		"samplingRatePerMillion: " + strconv.Itoa(int(t.SamplingRatePerMillion)) + "\n"
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return fmt.Errorf("writing the tracing configuration: %w", err)
	}
	return nil
}
