package operator

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// $OTEL_RESOURCE_ATTRIBUTES with an entry that cannot be used is refused
// whole, by Validate and TracerProvider alike, naming the entry, as every
// other OTEL_* value the flags cannot use: the SDK would merge it into
// every resource in part (an entry without "=" dropped, a value that does
// not decode kept encoded, a key kept encoded), report it on the standard
// library's log, and go on. The process's environment is left as it is.
// Without a trace endpoint tracing is off and the variable is not read.
func TestResourceAttributesThatCannotBeUsedAreRefused(t *testing.T) {
	for _, tc := range []struct{ name, attrs, entry string }{
		{"no value", "deployment.environment=prod,broken", "broken"},
		{"empty key", "deployment.environment=prod, =x", " =x"},
		{"bad escape", "deployment.environment=prod,team=%4", "team=%4"},
		{"bad escape inside", "deployment.environment=prod,team=a%zzb", "team=a%zzb"},
		{"encoded key", "example.com%2Fteam=platform", "example.com%2Fteam=platform"},
		{"encoded key, lower case", "example.com%2fteam=platform", "example.com%2fteam=platform"},
		{"encoded key after a bare percent sign", "a%b%41=x", "a%b%41=x"},
		{"value not UTF-8", "deployment.environment=prod,team=caf%e9", "team=caf%e9"},
		{"value not UTF-8 unencoded", "team=caf\xe9", `team=caf\xe9`},
		{"key not UTF-8", "caf\xe9=x", `caf\xe9=x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.attrs)
			logged := stdlibLog(t)
			f := parse(t, Flags{}, "--tracing-endpoint=http://127.0.0.1:1")
			err := f.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "$OTEL_RESOURCE_ATTRIBUTES")
			assert.Contains(t, err.Error(), tc.entry)
			tp, err := f.TracerProvider()
			require.Error(t, err)
			assert.Nil(t, tp)
			assert.Empty(t, logged.String(), "the standard library's log")
			assert.Equal(t, tc.attrs, os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "the environment as it was")

			off := parse(t, Flags{})
			assert.NoError(t, off.Validate(), "a variable read only by tracing refused while tracing is off")
		})
	}
}

// The entries of $OTEL_RESOURCE_ATTRIBUTES are in the tracer provider's
// resource, their values percent-decoded; $OTEL_SERVICE_NAME wins over
// the variable's service.name, which wins over the binary's name.
func TestResourceAttributesInTheResource(t *testing.T) {
	for _, tc := range []struct {
		name, attrs, serviceName string
		want                     map[string]string
	}{
		{"decoded", "deployment.environment=prod, team = a%2Cb%3Dc ", "",
			map[string]string{"deployment.environment": "prod", "team": "a,b=c", "service.name": "operator.test"}},
		{"service name from attributes", "service.name=fromattrs", "", map[string]string{"service.name": "fromattrs"}},
		{"service name variable wins", "service.name=fromattrs,team=x", "fromvar", map[string]string{"service.name": "fromvar", "team": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.attrs)
			if tc.serviceName != "" {
				t.Setenv("OTEL_SERVICE_NAME", tc.serviceName)
			}
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
			for k, v := range tc.want {
				assert.Equal(t, v, got[k], "%s in %v", k, got)
			}
			assert.Empty(t, logged.String(), "the standard library's log")
		})
	}
}
