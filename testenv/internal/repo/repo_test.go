package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoot(t *testing.T) {
	root, err := Root()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "module github.com/ctrlkit/ctrlkit\n"))
	dir, err := TestenvDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "testenv"), dir)
}

func TestIsTestenvDir(t *testing.T) {
	tests := []struct {
		name  string
		gomod string
		want  bool
	}{
		{"the testenv module", "module github.com/ctrlkit/ctrlkit/testenv\n\ngo 1.26.0\n", true},
		{"another module", "module github.com/ctrlkit/ctrlkit\n", false},
		{"no go.mod", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.gomod != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(tt.gomod), 0o644))
			}
			assert.Equal(t, tt.want, isTestenvDir(dir))
		})
	}
}
