package main

import (
	"bytes"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--namespace=ops", "--members-namespace=members"}))
	assert.Equal(t, "ops", o.namespace)
	assert.Equal(t, "members", o.membersNamespace)
	assert.Equal(t, fleetName, o.LeaderElectID)

	tests := []struct {
		args     []string
		wantCode int
		wantMsg  string
	}{
		{args: []string{"--help"}, wantCode: 0},
		{args: []string{"--no-such-flag"}, wantCode: 2, wantMsg: "flag provided but not defined"},
		{args: []string{"--workers=0"}, wantCode: 2, wantMsg: "--workers and --probe-interval must be positive"},
		{args: []string{"--probe-interval=0s"}, wantCode: 2, wantMsg: "--workers and --probe-interval must be positive"},
		{args: []string{"--kubeconfig=/nonexistent", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, wantCode: 1, wantMsg: "loading --kubeconfig /nonexistent"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		assert.Equal(t, tt.wantCode, run(tt.args, &stderr), "%v: %s", tt.args, stderr.String())
		assert.Contains(t, stderr.String(), tt.wantMsg)
	}
}
