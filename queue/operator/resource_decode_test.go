package operator

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TracerProvider's doc promises that an entry of
// $OTEL_RESOURCE_ATTRIBUTES that does not parse "is logged and left out"
// (through klog, as the resource error is), and docs/operator.md that
// nothing is left to a line of the standard library's log. An entry whose
// value does not percent-decode (the specification has the values
// percent-encoded) is kept, undecoded, in the resource, and reported only
// by the SDK's global error handler, on the standard library's log.
func TestResourceEntryThatDoesNotDecodeIsLeftOut(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=a%zzb")
	logged := stdlibLog(t)
	f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
	require.NoError(t, f.Validate())
	tp, err := f.TracerProvider()
	require.NoError(t, err)
	defer func() { _ = tp.(*sdktrace.TracerProvider).Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "x")
	span.End()
	got := map[string]string{}
	for _, kv := range span.(sdktrace.ReadOnlySpan).Resource().Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "prod", got["deployment.environment"])
	assert.NotContains(t, got, "team", "an entry that does not parse is left out: %v", got)
	assert.Empty(t, logged.String(), "the standard library's log")
}

// Every kind of entry of $OTEL_RESOURCE_ATTRIBUTES that does not parse is
// left out, the others kept, nothing on the standard library's log, and
// $OTEL_SERVICE_NAME wins over the variable's service.name.
func TestResourceEntriesThatDoNotParse(t *testing.T) {
	for _, tc := range []struct {
		name, attrs string
		want        map[string]string
		left        string
	}{
		{"no value", "deployment.environment=prod,broken", map[string]string{"deployment.environment": "prod"}, "broken"},
		{"empty key", "deployment.environment=prod, =x", map[string]string{"deployment.environment": "prod"}, ""},
		{"bad escape", "deployment.environment=prod,team=%4", map[string]string{"deployment.environment": "prod"}, "team"},
		{"decoded", "deployment.environment=prod,team=a%2Cb", map[string]string{"deployment.environment": "prod", "team": "a,b"}, ""},
		{"service name", "service.name=fromattrs,team=%zz", map[string]string{"service.name": "fromvar"}, "team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.attrs)
			t.Setenv("OTEL_SERVICE_NAME", "fromvar")
			logged := stdlibLog(t)
			f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
			tp, err := f.TracerProvider()
			require.NoError(t, err)
			defer func() { _ = tp.(*sdktrace.TracerProvider).Shutdown(context.Background()) }()
			_, span := tp.Tracer("test").Start(context.Background(), "x")
			span.End()
			got := map[string]string{}
			for _, kv := range span.(sdktrace.ReadOnlySpan).Resource().Attributes() {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			for k, v := range tc.want {
				assert.Equal(t, v, got[k], k)
			}
			assert.Equal(t, "fromvar", got["service.name"])
			if tc.left != "" {
				assert.NotContains(t, got, tc.left)
			}
			assert.NotContains(t, got, "")
			assert.Empty(t, logged.String(), "the standard library's log")
			assert.Equal(t, tc.attrs, os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "the environment as it was")
		})
	}
}
