// Package manifest reads the example operators' Deployment manifests in
// their tests.
package manifest

import (
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Deployment reads the Deployment in path and returns its pods'
// termination grace period and the arguments of its only container. It
// fails the test if the file is not such a Deployment.
func Deployment(t testing.TB, path string) (grace time.Duration, args []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	spec := d.Spec.Template.Spec
	if d.Kind != "Deployment" || spec.TerminationGracePeriodSeconds == nil || len(spec.Containers) != 1 {
		t.Fatalf("%s: want a Deployment with a grace period and one container", path)
	}
	return time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second, spec.Containers[0].Args
}
