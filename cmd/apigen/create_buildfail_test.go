package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A create whose build fails undoes what it wrote: every file of the
// module as it was (content and mode), no new file or directory left.
func TestCreateBuildFailureUndoes(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wip.go"), []byte("package main\n\nfunc wip() int { return \"not yet\" }\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(dir, "main.go"), 0o600))
	before, beforeDirs := tree(t, dir), dirs(t, dir)

	for _, args := range [][]string{{"create", "api", "-api", "example.com/v1/Gadget"}, {"create", "webhook", "-kind", "Widget", "-validation"}} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 1, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
		assert.Contains(t, stderr, "does not build")
		after := tree(t, dir)
		var diff []string
		for rel, text := range before {
			if got, ok := after[rel]; !ok || got != text {
				diff = append(diff, "changed or gone: "+rel)
			}
		}
		for rel := range after {
			if _, ok := before[rel]; !ok {
				diff = append(diff, "left: "+rel)
			}
		}
		slices.Sort(diff)
		assert.Empty(t, diff, "%s", args)
		assert.Equal(t, beforeDirs, dirs(t, dir), "%s: no directory left behind", args)
		info, err := os.Stat(filepath.Join(dir, "main.go"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s: main.go's mode", args)
	}
}
