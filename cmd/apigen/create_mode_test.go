package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// create edits the user's main.go and generate.go in place: their file
// modes are the user's, and stay as they were.
func TestCreateKeepsEditedFilesMode(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	require.NoError(t, os.Chmod(filepath.Join(dir, "main.go"), 0o600))
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	info, err := os.Stat(filepath.Join(dir, "main.go"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "main.go's mode after create api")
}
