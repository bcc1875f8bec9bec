package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/new-api.md: "The commands change only what they own". create
// webhook builds what it wrote before it succeeds; when that is the
// operator's main package alone, go build writes the operator's binary
// into the module's root, a file nobody asked for (named after the
// module, "op" here) that is left there.
func TestCreateWebhookLeavesNoBuildOutput(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	before := tree(t, dir)

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Widget", "-validation")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var added []string
	for rel := range tree(t, dir) {
		if _, ok := before[rel]; !ok {
			added = append(added, rel)
		}
	}
	slices.Sort(added)
	_, err := os.Stat(filepath.Join(dir, "op"))
	assert.ErrorIs(t, err, os.ErrNotExist, "create left the build's output in the module; files added: %v", added)
}

// A directory of the module named as the operator's binary would be
// ("op", the module's last path element) does not stop create webhook
// from building what it wrote, nor is it touched.
func TestCreateWebhookBuildsBesideADirectoryNamedAsTheBinary(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "op"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "op", "notes.txt"), []byte("notes\n"), 0o644))

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Widget", "-validation")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	notes, err := os.ReadFile(filepath.Join(dir, "op", "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "notes\n", string(notes))
}
