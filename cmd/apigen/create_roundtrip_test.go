package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Docs/new-api.md says go test ./... passes after the create commands:
// the new version starts with the hub's fields, even one the user added
// to it, so the skeleton conversion is exact and the generated round-trip
// test of the conversion webhook passes.
func TestCreatedVersionRoundTrips(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	p := filepath.Join(dir, "apis/example/v1/types.go")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	const msg = "\tMessage string `json:\"message,omitempty\"`\n"
	require.Contains(t, string(b), msg)
	b = []byte(strings.Replace(string(b), msg, msg+"\n\t// Size is the user's own field.\n\t// +optional\n\tSize int32 `json:\"size,omitempty\"`\n", 1))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	for _, args := range [][]string{
		{"create", "api", "-api", "example.com/v2/Widget"},
		{"create", "webhook", "-kind", "Widget", "-conversion"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestConvertWidgetWebhook", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	lines := strings.Split(string(out), "\n")
	if len(lines) > 12 {
		lines = lines[:12]
	}
	assert.NoError(t, err, "go test of the generated conversion webhook:\n%s", strings.Join(lines, "\n"))
}
