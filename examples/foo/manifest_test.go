package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/examples/internal/manifest"
)

// The Deployment gives the operator more time to stop than its worst case:
// draining for --shutdown-timeout, then as long again for cancelled
// reconciles, then releasing the Lease (bounded by the renew deadline).
func TestDeploymentGracePeriodCoversShutdown(t *testing.T) {
	grace, args := manifest.Deployment(t, "deploy/deployment.yaml")
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := bindFlags(fs)
	require.NoError(t, fs.Parse(args))
	worst := 2*flags.ShutdownTimeout + flags.RenewDeadline
	require.Greater(t, grace, worst, "terminationGracePeriodSeconds %s, worst-case stop %s", grace, worst)
}
