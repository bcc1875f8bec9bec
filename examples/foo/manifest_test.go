package main

import (
	"flag"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The Deployment gives the controller more time to stop than its worst
// case: draining for --shutdown-timeout, then as long again for cancelled
// reconciles, then releasing the Lease.
func TestDeploymentGracePeriodCoversShutdown(t *testing.T) {
	data, err := os.ReadFile("deploy/deployment.yaml")
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(data, &d))
	require.Equal(t, "Deployment", d.Kind)
	require.NotNil(t, d.Spec.Template.Spec.TerminationGracePeriodSeconds)
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second

	containers := d.Spec.Template.Spec.Containers
	require.Len(t, containers, 1)
	fs := flag.NewFlagSet("foo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := bindFlags(fs)
	require.NoError(t, fs.Parse(containers[0].Args))
	worst := 2*flags.ShutdownTimeout + flags.RenewDeadline // and the Lease release, bounded by the renew deadline
	require.Greater(t, grace, worst, "terminationGracePeriodSeconds %s, worst-case stop %s", grace, worst)
}
