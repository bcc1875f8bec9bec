package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// init refuses bad flags and a module that has the operator's files
// already, and writes nothing then.
func TestInitRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		existing string
		wantCode int
		wantErr  string
	}{
		{name: "no name", args: []string{"init"}, wantCode: 2, wantErr: `-name "" is not a name`},
		{name: "a name with capitals", args: []string{"init", "-name", "My-Operator"}, wantCode: 2, wantErr: `-name "My-Operator" is not a name`},
		{name: "a namespace that is not a name", args: []string{"init", "-name", "op", "-namespace", "a.b"}, wantCode: 2, wantErr: `-namespace "a.b" is not a namespace name`},
		{name: "an API without a version", args: []string{"init", "-name", "op", "-api", "example.com/Widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "an API of a group without a dot", args: []string{"init", "-name", "op", "-api", "example/v1/Widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "a lowercase kind", args: []string{"init", "-name", "op", "-api", "example.com/v1/widget"}, wantCode: 2, wantErr: "is not GROUP/VERSION/KIND"},
		{name: "an argument too many", args: []string{"init", "-name", "op", "extra"}, wantCode: 2, wantErr: `unexpected arguments ["extra"]`},
		{name: "a module with a main.go", args: []string{"init", "-name", "op"}, existing: "main.go", wantCode: 1, wantErr: "the module already has controller.go, main.go"},
		{name: "a module with the API's types", args: []string{"init", "-name", "op", "-api", "example.com/v1/Thing"}, existing: "apis/example/v1/types.go", wantCode: 1, wantErr: "the module already has apis/example/v1/types.go, controller.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			if tt.existing != "" {
				p := filepath.Join(dir, tt.existing)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte("package mine\n"), 0o644))
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, _, stderr := apigen(t, dir, tt.args...)
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
		})
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{"widget": "widgets", "policy": "policies", "gateway": "gateways", "box": "boxes", "class": "classes", "batch": "batches"} {
		assert.Equal(t, want, plural(kind), kind)
	}
}

// TestNewOperatorFromInit starts new modules the way docs/new-api.md says,
// the commands of docs/using.md and then go tool apigen init (built
// from this checkout): the module
// passes go vet and go test, regenerates to the same files, and builds an
// image, on the first try; without an API, it passes go vet and go test.
func TestNewOperatorFromInit(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
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
		// after runs after init, vet, test and the check that go generate
		// changes nothing.
		after string
		image bool
		want  string // a file after
	}{
		// The deploy command of the docs is the one of generate.go: it
		// changes nothing either.
		{name: "with an API", init: initAPI, after: deploy + "diff -r ../before .\n", image: true, want: "deploy/kustomization.yaml"},
		{name: "on ConfigMaps", init: "go tool apigen init -name cm-operator\n", after: rolesOnly, want: "config/rbac/role.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := setup + tt.init + "go vet ./...\ngo test ./...\n" +
				"cp -r . ../before\ngo generate ./...\ndiff -r ../before .\n" + tt.after
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
