package loc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.go")
	src := "// Package a is a package.\npackage a\n\n/* a\nblock */\nfunc f() int { // trailing\n\treturn 1 +\n\t\t2\n}\n\n// done\n"
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	n, err := Count(path)
	require.NoError(t, err)
	assert.Equal(t, 5, n, "package, func, return, 2, }")
	_, err = Count(filepath.Join(t.TempDir(), "missing.go"))
	assert.Error(t, err)
}
