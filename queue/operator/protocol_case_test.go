package operator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// the OpenTelemetry specification has enum values of the OTEL_*
// variables read case-insensitively ("Enum values SHOULD be interpreted in
// a case-insensitive manner"), as this package does for
// $OTEL_TRACES_EXPORTER and $OTEL_TRACES_SAMPLER ("in any case"). The
// protocol, http/protobuf, is compared as given: a valid setting is
// refused and the operator does not start.
func TestProtocolCaseInsensitive(t *testing.T) {
	for _, v := range []string{"HTTP/PROTOBUF", "Http/Protobuf", " http/protobuf "} {
		t.Run(v, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", v)
			f := parse(t, Flags{})
			require.NoError(t, f.Validate())
			_, err := f.TracerProvider()
			if f.tracer != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = f.tracer.Shutdown(ctx)
			}
			require.NoError(t, err)
		})
	}
}
