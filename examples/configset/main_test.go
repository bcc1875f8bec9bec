package main

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/internal/manifest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantMsg  string
	}{
		{args: []string{"--help"}, wantCode: 0},
		{args: []string{"--members-selector=a b"}, wantCode: 2, wantMsg: "--members-selector"},
		{args: []string{"--workers=0"}, wantCode: 2, wantMsg: "--workers must be positive"},
		{args: []string{"--kubeconfig=/nonexistent", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, wantCode: 1, wantMsg: "loading --kubeconfig /nonexistent"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		assert.Equal(t, tt.wantCode, run(tt.args, &stderr), "%v: %s", tt.args, stderr.String())
		assert.Contains(t, stderr.String(), tt.wantMsg)
	}
}

func TestDeploymentGracePeriodCoversShutdown(t *testing.T) {
	manifest.RequireGraceCoversShutdown(t, "deploy/deployment.yaml", func(fs *flag.FlagSet) *operator.Flags { return &bindFlags(fs).Flags })
}
