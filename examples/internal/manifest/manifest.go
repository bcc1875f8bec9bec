// Package manifest checks the example operators' Deployment manifests in
// their tests.
package manifest

import (
	"flag"
	"io"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// RequireGraceCoversShutdown fails the test unless the Deployment in path
// gives its pods more time to stop than the operator's worst case with the
// container's arguments: draining for --shutdown-timeout, as long again for
// cancelled reconciles, then releasing the Lease (bounded by the renew
// deadline). bind registers the operator's flags, as its main does.
func RequireGraceCoversShutdown(t testing.TB, path string, bind func(*flag.FlagSet) *operator.Flags) {
	t.Helper()
	grace, args := deployment(t, path)
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s: container arguments: %v", path, err)
	}
	if worst := 2*flags.ShutdownTimeout + flags.RenewDeadline; grace <= worst {
		t.Fatalf("%s: terminationGracePeriodSeconds %s is not above the worst-case stop %s", path, grace, worst)
	}
}

// deployment reads the Deployment in path and returns its pods'
// termination grace period and the arguments of its only container. It
// fails the test if the file is not such a Deployment.
func deployment(t testing.TB, path string) (grace time.Duration, args []string) {
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
