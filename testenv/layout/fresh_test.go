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

// TestNewOperatorFromInit starts new modules the way docs/new-api.md says,
// the commands of docs/using.md and then go tool apigen init: the module
// passes go vet and go test, regenerates to the same files, and builds an
// image, on the first try; without an API, it passes go vet and go test.
func TestNewOperatorFromInit(t *testing.T) {
	t.Parallel()
	root, err := repo.Root()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "using.md"))
	require.NoError(t, err)
	_, section, _ := strings.Cut(string(doc), "## From a checkout, before a tagged release")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "docs/using.md's section has no sh block")
	// Its commands up to go mod tidy: the module has no package to build
	// or vet before init.
	setup, _, ok := strings.Cut(strings.ReplaceAll(block[1], "/path/to/ctrlkit", root), "go mod tidy\n")
	require.True(t, ok, "docs/using.md's block has no go mod tidy")
	setup += "go mod tidy\n"

	newAPI, err := os.ReadFile(filepath.Join(root, "docs", "new-api.md"))
	require.NoError(t, err)
	initAPI := docCommand(t, newAPI, "go tool apigen init -name widget-operator -api")
	deploy := docCommand(t, newAPI, "go tool apigen -crd deploy/crd -rbac deploy")
	rolesOnly := docCommand(t, newAPI, `go tool apigen -out "" -crd "" -rbac config/rbac`)

	for _, tt := range []struct {
		name, init string
		// after runs after init, vet, test and a copy of the module to
		// ../before.
		after string
		image bool
		want  string // a file after
	}{
		// The deploy command of the docs is generate.go's (checked below):
		// it changes nothing.
		{name: "with an API", init: initAPI, after: deploy + "diff -r ../before .\n", image: true, want: "deploy/kustomization.yaml"},
		{name: "on ConfigMaps", init: "go tool apigen init -name cm-operator\n", after: "go generate ./...\ndiff -r ../before .\n" + rolesOnly, want: "config/rbac/role.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := setup + tt.init + "go vet ./...\ngo test ./...\ncp -r . ../before\n" + tt.after
			if tt.image {
				script += "go tool image -output ../images -arch amd64 .=widget-operator:dev\n"
			}
			cmd := exec.CommandContext(t.Context(), "bash", "-euxo", "pipefail", "-c", script)
			cmd.Dir = filepath.Join(dir, "op")
			require.NoError(t, os.Mkdir(cmd.Dir, 0o755))
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "apigen init: go mod tidy done")
			require.FileExists(t, filepath.Join(cmd.Dir, "deploy", "kustomization.yaml"))
			require.FileExists(t, filepath.Join(cmd.Dir, filepath.FromSlash(tt.want)))
			if tt.image {
				require.Contains(t, string(out), "widget-operator:dev sha256:")
				require.FileExists(t, filepath.Join(dir, "images", "widget-operator.tar"))
				gen, err := os.ReadFile(filepath.Join(cmd.Dir, "generate.go"))
				require.NoError(t, err)
				_, line, ok := strings.Cut(string(gen), "//go:generate ")
				require.True(t, ok, "generate.go has a go:generate line")
				line, _, _ = strings.Cut(line, "\n")
				require.Equal(t, strings.Fields(strings.ReplaceAll(deploy, "\\\n", " ")), strings.Fields(line),
					"generate.go runs the deploy command of docs/new-api.md")
			}
		})
	}
}

// docCommand returns the command of a Markdown file's indented block that
// begins with prefix, with the lines it continues onto with a trailing
// backslash, and a newline.
func docCommand(t *testing.T, doc []byte, prefix string) string {
	t.Helper()
	lines := strings.Split(string(doc), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "    "+prefix) {
			continue
		}
		cmd := strings.TrimPrefix(line, "    ")
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + strings.TrimPrefix(lines[i], "    ")
		}
		return cmd + "\n"
	}
	t.Fatalf("no command %q in the docs", prefix)
	return ""
}
