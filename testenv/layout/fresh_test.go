package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// An operator's module as small as one can be: its code imports the library,
// its test the test environment.
const (
	freshMain = `package main

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

func main() { fmt.Println(reconcile.Result{}) }
`
	freshTest = `package main

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

func TestSizes(t *testing.T) {
	if controlplane.APIServerOnly == controlplane.Full {
		t.Fatal("one size")
	}
}
`
)

// TestFreshModuleFromACheckout runs the commands of docs/using.md, "From a
// checkout, before a tagged release", in a new module, with the placeholder
// path replaced by this checkout: the library, testenv and the tools resolve,
// build and run.
func TestFreshModuleFromACheckout(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "using.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "## From a checkout, before a tagged release")
	require.True(t, ok, "docs/using.md has no section on using a checkout")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "the section has no sh block")
	script := strings.ReplaceAll(block[1], "/path/to/ctrlkit", root)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(freshMain), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main_test.go"), []byte(freshTest), 0o644))
	cmd := exec.CommandContext(t.Context(), "bash", "-euxo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "usage: apigen", "go tool apigen -h")

	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	for _, line := range []string{
		"github.com/ctrlkit/ctrlkit/testenv v0.0.0-00010101000000-000000000000",
		"tool (\n\tgithub.com/ctrlkit/ctrlkit/cmd/apigen\n\tgithub.com/ctrlkit/ctrlkit/cmd/image\n)",
	} {
		require.Contains(t, string(gomod), line, "go.mod after the commands")
	}
}
