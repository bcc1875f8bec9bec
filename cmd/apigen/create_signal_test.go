package main

import (
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/new-api.md: "a later step that fails undoes what the command
// wrote, as init does", and init's undo covers SIGINT and SIGTERM. A
// create webhook stopped by SIGTERM while it generates must leave the
// user's main.go and generate.go (the files it edited at their markers)
// as they were, not remove them.
func TestCreateStoppedRestoresEditedFiles(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	before, beforeDirs := tree(t, dir), dirs(t, dir)

	code, _, stderr := apigenIn(t, dir, []string{stopEnv + "=crd:TERM"}, "create", "webhook", "-kind", "Widget", "-validation")
	require.Equal(t, 128+int(syscall.SIGTERM), code, "stderr: %s", stderr)
	after := tree(t, dir)
	var missing, changed []string
	for rel, text := range before {
		got, ok := after[rel]
		switch {
		case !ok:
			missing = append(missing, rel)
		case got != text:
			changed = append(changed, rel)
		}
	}
	slices.Sort(missing)
	slices.Sort(changed)
	assert.Empty(t, missing, "files of the module gone after create was stopped by SIGTERM")
	assert.Empty(t, changed, "files of the module changed after create was stopped by SIGTERM")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
}
