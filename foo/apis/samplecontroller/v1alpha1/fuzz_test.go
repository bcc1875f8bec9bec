package v1alpha1_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// crdNamePattern is the CRD schema's pattern for spec.deploymentName; the
// fuzz target checks that the Go validation agrees with the schema.
var crdNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// FuzzValidateFooSpec checks that ValidateFooSpec never panics and accepts
// exactly the specs the CRD schema accepts.
func FuzzValidateFooSpec(f *testing.F) {
	f.Add("example-foo", int32(1), true)
	f.Add("", int32(0), false)
	f.Add("a.b-c.d", int32(1000), true)
	f.Add("Web_1", int32(-1), true)
	f.Add(strings.Repeat("a", 253), int32(1001), true)
	f.Add(strings.Repeat("a", 254), int32(5), true)
	f.Add("a..b", int32(3), true)
	f.Add("-a", int32(3), true)
	f.Add("a\x00b", int32(3), false)
	f.Fuzz(func(t *testing.T, name string, replicas int32, setReplicas bool) {
		spec := &v1alpha1.FooSpec{DeploymentName: name}
		if setReplicas {
			spec.Replicas = &replicas
		}
		errs := v1alpha1.ValidateFooSpec(spec)

		nameOK := name != "" && len(name) <= v1alpha1.DeploymentNameMaxLength && crdNamePattern.MatchString(name)
		replicasOK := !setReplicas || (replicas >= v1alpha1.MinReplicas && replicas <= v1alpha1.MaxReplicas)
		if got, want := len(errs) == 0, nameOK && replicasOK; got != want {
			t.Fatalf("ValidateFooSpec(%q, replicas=%d set=%v) valid=%v, schema says valid=%v: %v", name, replicas, setReplicas, got, want, errs)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.") {
				t.Fatalf("error outside spec: %v", e)
			}
		}
	})
}
