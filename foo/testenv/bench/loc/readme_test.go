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

// The README's "Lines of code" tables: each operator's files, with ctrlkit
// and with controller-runtime, and the files of the tests of the same
// scenarios, relative to the repository's root.
var operators = []struct {
	row                     string // the tables' first column
	ctrlkit, peer           []string
	ctrlkitTests, peerTests []string
}{
	{
		row:          "Foo -> Deployment (`examples/foo`)",
		ctrlkit:      []string{"examples/foo/main.go", "foo/controller.go"},
		peer:         []string{"foo/testenv/bench/cmd/crfoo/main.go", "foo/testenv/bench/cmd/crfoo/controller.go"},
		ctrlkitTests: []string{"foo/behaviour_test.go"},
		peerTests:    []string{"foo/testenv/bench/cmd/crfoo/suite_test.go", "foo/testenv/bench/cmd/crfoo/controller_test.go"},
	},
	{
		row:          "external Targets (`examples/external`)",
		ctrlkit:      []string{"examples/external/main.go", "examples/external/target.go"},
		peer:         []string{"foo/testenv/bench/cmd/crexternal/main.go", "foo/testenv/bench/cmd/crexternal/target.go"},
		ctrlkitTests: []string{"examples/external/target_test.go"},
		peerTests:    []string{"foo/testenv/bench/cmd/crexternal/suite_test.go", "foo/testenv/bench/cmd/crexternal/target_test.go"},
	},
	{
		row:          "external Buckets with a finalizer (`examples/bucket`)",
		ctrlkit:      []string{"examples/bucket/main.go", "examples/bucket/controller.go"},
		peer:         []string{"foo/testenv/bench/cmd/crbucket/main.go", "foo/testenv/bench/cmd/crbucket/controller.go"},
		ctrlkitTests: []string{"examples/bucket/controller_test.go"},
		peerTests:    []string{"foo/testenv/bench/cmd/crbucket/suite_test.go", "foo/testenv/bench/cmd/crbucket/controller_test.go"},
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

// The tables in README.md state today's counts: of each operator's code,
// where ctrlkit takes at most 0.90 of controller-runtime's lines for every
// operator (the ctrlkit Foo operator also shards its caches, which its
// peer cannot); and of the tests of the same scenarios, ctrlkit's over
// strict fakes with queuetest and the twins' with envtest, as each one's
// documentation teaches.
func TestREADMETables(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	row := func(name string, ctrlkit, peer []string) (ours, theirs int) {
		ours, ourFiles := count(t, ctrlkit)
		theirs, theirFiles := count(t, peer)
		row := fmt.Sprintf("| %s | %d (%s) | %d (%s) |", name, ours, ourFiles, theirs, theirFiles)
		t.Log(row)
		assert.Contains(t, string(readme), row+"\n", "README.md's line counts are out of date")
		return ours, theirs
	}
	for _, op := range operators {
		ours, theirs := row(op.row, op.ctrlkit, op.peer)
		assert.LessOrEqual(t, 100*ours, 90*theirs, "%s: ctrlkit's %d lines are more than 0.90 of controller-runtime's %d", op.row, ours, theirs)
		row(op.row, op.ctrlkitTests, op.peerTests)
	}
}
