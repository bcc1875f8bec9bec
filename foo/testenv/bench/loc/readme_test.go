package loc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's "Lines of code" table: each operator's files, with ctrlkit
// and with controller-runtime, relative to the repository's root.
var operators = []struct {
	row           string // the table's first column
	ctrlkit, peer []string
}{
	{
		row:     "Foo -> Deployment (`examples/foo`)",
		ctrlkit: []string{"examples/foo/main.go", "foo/controller.go"},
		peer:    []string{"foo/testenv/bench/cmd/crfoo/main.go", "foo/testenv/bench/cmd/crfoo/controller.go"},
	},
	{
		row:     "external Targets (`examples/external`)",
		ctrlkit: []string{"examples/external/main.go", "examples/external/target.go"},
		peer:    []string{"foo/testenv/bench/cmd/crexternal/main.go", "foo/testenv/bench/cmd/crexternal/target.go"},
	},
	{
		row:     "external Buckets with a finalizer (`examples/bucket`)",
		ctrlkit: []string{"examples/bucket/main.go", "examples/bucket/controller.go"},
		peer:    []string{"foo/testenv/bench/cmd/crbucket/main.go", "foo/testenv/bench/cmd/crbucket/controller.go"},
	},
}

const root = "../../../.."

func count(t *testing.T, files []string) (int, string) {
	t.Helper()
	var paths, names []string
	for _, f := range files {
		paths = append(paths, filepath.Join(root, f))
		names = append(names, "`"+f+"`")
	}
	n, err := Count(paths...)
	require.NoError(t, err)
	return n, strings.Join(names, ", ")
}

// The table in README.md states today's counts, and ctrlkit takes at most
// 0.93 of controller-runtime's lines for every operator (the ctrlkit Foo
// operator also shards its caches, which its peer cannot).
func TestREADMETable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	for _, op := range operators {
		ours, ourFiles := count(t, op.ctrlkit)
		theirs, theirFiles := count(t, op.peer)
		row := fmt.Sprintf("| %s | %d (%s) | %d (%s) |", op.row, ours, ourFiles, theirs, theirFiles)
		t.Log(row)
		assert.Contains(t, string(readme), row+"\n", "README.md's line counts are out of date")
		assert.LessOrEqual(t, 100*ours, 93*theirs, "%s: ctrlkit's %d lines are more than 0.93 of controller-runtime's %d", op.row, ours, theirs)
	}
}
