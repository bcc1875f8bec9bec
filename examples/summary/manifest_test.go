package main

import (
	"flag"
	"testing"

	"github.com/ctrlkit/ctrlkit/examples/internal/manifest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

func TestDeploymentGracePeriodCoversShutdown(t *testing.T) {
	manifest.RequireGraceCoversShutdown(t, "deploy/deployment.yaml", func(fs *flag.FlagSet) *operator.Flags { return &bindFlags(fs).Flags })
}
