package loc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables of docs/lines-of-code.md: each operator's files, with ctrlkit
// and with controller-runtime, and the files of the tests of the same
// scenarios, relative to the repository's root.
var operators = []struct {
	row                     string // the tables' first column
	ctrlkit, peer           []string
	ctrlkitTests, peerTests []string
	// atMost is the largest share of controller-runtime's lines, in
	// percent, that ctrlkit's may take; 90 if zero.
	atMost int
	// testsAtMost is the same for the tests' lines; no bound if zero.
	testsAtMost int
}{
	{
		row:          "Foo -> Deployment (`examples/foo`)",
		ctrlkit:      []string{"examples/foo/main.go", "foo/controller.go"},
		peer:         []string{"testenv/bench/cmd/crfoo/main.go", "testenv/bench/cmd/crfoo/controller.go"},
		ctrlkitTests: []string{"foo/behaviour_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crfoo/suite_test.go", "testenv/bench/cmd/crfoo/controller_test.go"},
	},
	{
		row:          "external Targets (`examples/external`)",
		ctrlkit:      []string{"examples/external/main.go", "examples/external/target.go"},
		peer:         []string{"testenv/bench/cmd/crexternal/main.go", "testenv/bench/cmd/crexternal/target.go"},
		ctrlkitTests: []string{"examples/external/target_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crexternal/suite_test.go", "testenv/bench/cmd/crexternal/target_test.go"},
	},
	{
		row:          "external Buckets with a finalizer (`examples/bucket`)",
		ctrlkit:      []string{"examples/bucket/main.go", "examples/bucket/controller.go"},
		peer:         []string{"testenv/bench/cmd/crbucket/main.go", "testenv/bench/cmd/crbucket/controller.go"},
		ctrlkitTests: []string{"examples/bucket/controller_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crbucket/suite_test.go", "testenv/bench/cmd/crbucket/controller_test.go"},
	},
	// The Bucket operators' webhooks: the handlers and the conversion
	// functions. The lines that wire them (flags, server, certificate) are
	// in the main.go files of the row above. The twin's webhook tests run
	// in the suite of the row above, which serves the webhooks to every
	// test. On either side these are a few plain functions handed to the
	// library, so the row is about even: ctrlkit's may not be longer.
	{
		row:          "Bucket webhooks: conversion, defaults, validation (`examples/bucket`)",
		ctrlkit:      []string{"examples/bucket/webhooks.go", "examples/bucket/apis/storage/v1alpha1/conversion.go"},
		peer:         []string{"testenv/bench/cmd/crbucket/webhook.go", "testenv/bench/cmd/crbucket/conversion.go"},
		ctrlkitTests: []string{"examples/bucket/webhooks_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crbucket/webhook_test.go"},
		atMost:       100,
	},
	// The fleet operators: examples/fleet's twin is written with
	// multicluster-runtime, controller-runtime's extension to many
	// clusters.
	{
		row:          "ConfigMaps copied to a fleet of clusters (`examples/fleet`)",
		ctrlkit:      []string{"examples/fleet/main.go", "examples/fleet/copier.go"},
		peer:         []string{"testenv/bench/cmd/crfleet/main.go", "testenv/bench/cmd/crfleet/copier.go"},
		ctrlkitTests: []string{"examples/fleet/copier_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crfleet/suite_test.go", "testenv/bench/cmd/crfleet/copier_test.go"},
	},
	// A custom resource of the management cluster applied to every member,
	// its status aggregated per member: ctrlkit's at most 0.75 of its
	// twin's, in code and in tests.
	{
		row:          "ConfigSets applied to a fleet, status per member (`examples/configset`)",
		ctrlkit:      []string{"examples/configset/main.go", "examples/configset/configsets.go"},
		peer:         []string{"testenv/bench/cmd/crconfigset/main.go", "testenv/bench/cmd/crconfigset/configset.go"},
		ctrlkitTests: []string{"examples/configset/configsets_test.go"},
		peerTests:    []string{"testenv/bench/cmd/crconfigset/suite_test.go", "testenv/bench/cmd/crconfigset/configset_test.go"},
		atMost:       75,
		testsAtMost:  75,
	},
}

const root = "../../.."

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

// The tables in docs/lines-of-code.md state today's counts: of each operator's code,
// where ctrlkit takes at most 0.90 of controller-runtime's lines for every
// operator (the ctrlkit Foo operator also shards its caches, which its
// peer cannot), and of the Bucket operators' webhooks, at most as many; and of
// the tests of the same scenarios, ctrlkit's over strict fakes with
// queuetest (its webhooks' posting reviews with webhooktest) and the
// twins' with envtest, as each one's documentation teaches.
func TestREADMETables(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "docs", "lines-of-code.md"))
	require.NoError(t, err)
	row := func(name string, ctrlkit, peer []string) (ours, theirs int) {
		ours, ourFiles := count(t, ctrlkit)
		theirs, theirFiles := count(t, peer)
		row := fmt.Sprintf("| %s | %d (%s) | %d (%s) |", name, ours, ourFiles, theirs, theirFiles)
		t.Log(row)
		assert.Contains(t, string(readme), row+"\n", "docs/lines-of-code.md's line counts are out of date")
		return ours, theirs
	}
	for _, op := range operators {
		ours, theirs := row(op.row, op.ctrlkit, op.peer)
		atMost := op.atMost
		if atMost == 0 {
			atMost = 90
		}
		assert.LessOrEqual(t, 100*ours, atMost*theirs, "%s: ctrlkit's %d lines are more than %d%% of controller-runtime's %d", op.row, ours, atMost, theirs)
		ours, theirs = row(op.row, op.ctrlkitTests, op.peerTests)
		if op.testsAtMost != 0 {
			assert.LessOrEqual(t, 100*ours, op.testsAtMost*theirs, "%s: ctrlkit's %d test lines are more than %d%% of controller-runtime's %d", op.row, ours, op.testsAtMost, theirs)
		}
	}
}

// The fleet operators' counts are also quoted on the front page, in the
// chapter on many clusters and in the example's README: the same figures
// as the table's.
func TestFleetCountsQuoted(t *testing.T) {
	ours, _ := count(t, []string{"examples/fleet/main.go", "examples/fleet/copier.go"})
	theirs, _ := count(t, []string{"testenv/bench/cmd/crfleet/main.go", "testenv/bench/cmd/crfleet/copier.go"})
	for file, quote := range map[string]string{
		"README.md":                fmt.Sprintf("is %d lines of code where its twin written with\nmulticluster-runtime takes %d.", ours, theirs),
		"docs/multicluster.md":     fmt.Sprintf("a whole operator, %d\nlines of code where its twin written with multicluster-runtime v0.23.1\ntakes %d", ours, theirs),
		"examples/fleet/README.md": fmt.Sprintf("is %d lines of code to this example's %d", theirs, ours),
	} {
		text, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		assert.Contains(t, string(text), quote, "%s quotes the fleet operators' line counts out of date", file)
	}
}

// deployRows are the examples' hand-written files around the Go code
// beside those of their controller-runtime twins: ctrlkit's are the
// patches of the generated deploy folder and the command of make
// generate that generates it; the twins' are the Dockerfile and the
// config folder as kubebuilder's scaffold lays it out, but for what
// controller-gen generates into it (not in the repository).
var deployRows = []struct{ row, example, twin string }{
	{row: "Foo -> Deployment (`examples/foo`)", example: "foo", twin: "crfoo"},
	{row: "external Targets (`examples/external`)", example: "external", twin: "crexternal"},
	{row: "external Buckets with webhooks (`examples/bucket`)", example: "bucket", twin: "crbucket"},
	{row: "ConfigMaps copied to a fleet of clusters (`examples/fleet`)", example: "fleet", twin: "crfleet"},
}

// The table of the hand-written non-Go lines in docs/lines-of-code.md
// states today's counts, and ctrlkit's are at most a third of
// controller-runtime's.
func TestDeployTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "docs", "lines-of-code.md"))
	require.NoError(t, err)
	for _, r := range deployRows {
		patches, err := filepath.Glob(filepath.Join(root, "examples", r.example, "deploy", "patches", "*"))
		require.NoError(t, err)
		require.NotEmpty(t, patches)
		ours, err := CountConfig(patches...)
		require.NoError(t, err)
		cmd, err := MakeCommand(filepath.Join(root, "Makefile"), "$(APIGEN)", "examples/"+r.example+"/deploy")
		require.NoError(t, err)
		ours += countConfigLines(cmd)

		twin := filepath.Join(root, "testenv", "bench", "cmd", r.twin)
		files := []string{filepath.Join(twin, "Dockerfile")}
		require.NoError(t, filepath.WalkDir(filepath.Join(twin, "config"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		}))
		theirs, err := CountConfig(files...)
		require.NoError(t, err)

		line := fmt.Sprintf("| %s | %d (%d patches in `examples/%s/deploy/patches`, %d lines of `make generate`) | %d (`testenv/bench/cmd/%s`: `Dockerfile` and %d files in `config`) |",
			r.row, ours, len(patches), r.example, countConfigLines(cmd), theirs, r.twin, len(files)-1)
		t.Log(line)
		assert.Contains(t, string(readme), line+"\n", "docs/lines-of-code.md's table of non-Go lines is out of date")
		assert.LessOrEqual(t, 3*ours, theirs, "%s: ctrlkit's %d lines are more than a third of controller-runtime's %d", r.row, ours, theirs)
	}
}
