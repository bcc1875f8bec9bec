package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// init refuses bad flags and a module that has the operator's files
// already, and writes nothing then. (testenv/layout's
// TestNewOperatorFromInit runs it in a new module through go test and
// an image.)
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
		{name: "an API group whose first label is internal", args: []string{"init", "-name", "op", "-api", "internal.example.com/v1/Widget"}, wantCode: 2, wantErr: `the group's first label "internal" names the API's Go package directories`},
		{name: "an API group whose first label is testdata", args: []string{"init", "-name", "op", "-api", "testdata.example.com/v1/Widget"}, wantCode: 2, wantErr: "ignores a testdata directory's packages"},
		{name: "an API group whose first label is vendor", args: []string{"init", "-name", "op", "-api", "vendor.example.com/v1/Widget"}, wantCode: 2, wantErr: "ignores a vendor directory's packages"},
		{name: "an API group whose first label is a keyword", args: []string{"init", "-name", "op", "-api", "func.example.com/v1/Widget"}, wantCode: 2, wantErr: "it is a Go keyword"},
		{name: "an API group whose first label and version name apimachinery's metav1", args: []string{"init", "-name", "op", "-api", "meta.example.com/v1/Widget"}, wantCode: 2, wantErr: "import the API's packages as metav1, the name under which they import k8s.io/apimachinery/pkg/apis/meta/v1 too"},
		{name: "a module with a main.go", args: []string{"init", "-name", "op"}, existing: "main.go", wantCode: 1, wantErr: "the module already has controller.go, main.go"},
		{name: "a module with a hand-written webhook manifest", args: []string{"init", "-name", "op", "-api", "example.com/v1/Widget", "-webhooks"}, existing: "deploy/webhook.yaml", wantCode: 1, wantErr: "deploy/webhook.yaml"},
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

// An -api that is not GROUP/VERSION/KIND (of init and create api) is
// refused naming the part that is wrong and why.
func TestAPIFlagRefusalNamesTheWrongPart(t *testing.T) {
	t.Parallel()
	tests := []struct{ api, want string }{
		{api: "shop.example.com/v3beta/Order", want: `-api "shop.example.com/v3beta/Order" is not GROUP/VERSION/KIND: the version "v3beta" is not v and a number, then alpha or beta and a number if any (v1, v2beta1, v1alpha1), the versions Kubernetes orders`},
		{api: "example.com/V2/Widget", want: `the version "V2" is not v and a number`},
		{api: "example/v1/Widget", want: `-api "example/v1/Widget" is not GROUP/VERSION/KIND: the group "example" is not a DNS name with a dot (lowercase letters, digits, dashes and dots, such as example.com), which a CRD's group must be`},
		{api: "Example.com/v1/Widget", want: `the group "Example.com" is not a DNS name with a dot`},
		{api: "example.com/v1/widget", want: `-api "example.com/v1/widget" is not GROUP/VERSION/KIND: the kind "widget" is not a capital letter followed by letters and digits, as the name of its exported Go type`},
		{api: "example.com/v1/Wid-get", want: `the kind "Wid-get" is not a capital letter`},
		{api: "example.com/Widget", want: `-api "example.com/Widget" is not GROUP/VERSION/KIND: it has 2 parts separated by "/", not 3, such as example.com/v1/Widget`},
		{api: "example/V1/widget", want: `the group "example" is not a DNS name with a dot (lowercase letters, digits, dashes and dots, such as example.com), which a CRD's group must be; the version "V1" is not`},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			s := &scaffold{Name: "op"}
			err := s.derive(tt.api)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	op, _ := plannedOperator(t, nil)
	_, err := op.planAPI(t.Context(), apiRequest{api: "shop.example.com/v3beta/Order"})
	assert.ErrorContains(t, err, `-api "shop.example.com/v3beta/Order" is not GROUP/VERSION/KIND: the version "v3beta" is not v and a number`, "create api's")
}

// operatorModule makes a new module that has apigen as a tool, from this
// checkout, as docs/using.md makes one, in dir/op; it returns dir/op.
func operatorModule(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod := filepath.Join(dir, "op")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	gomod := "module example.com/op\n\ngo 1.26.0\n\n" +
		"require (\n\tgithub.com/ctrlkit/ctrlkit v0.0.0-00010101000000-000000000000\n\tgithub.com/ctrlkit/ctrlkit/cmd v0.0.0-00010101000000-000000000000\n)\n\n" +
		"replace (\n\tgithub.com/ctrlkit/ctrlkit => " + root + "\n\tgithub.com/ctrlkit/ctrlkit/cmd => " + filepath.Join(root, "cmd") + "\n)\n\n" +
		"tool github.com/ctrlkit/ctrlkit/cmd/apigen\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	cmd := exec.CommandContext(t.Context(), "go", "mod", "tidy")
	cmd.Dir = mod
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go mod tidy:\n%s", out)
	return mod
}

// apigenIn runs apigen in dir with extra in its environment.
func apigenIn(t *testing.T, dir string, extra []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron(append([]string{commandEnv + "=1"}, extra...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, "running apigen; stderr: %s", errOut.String())
	return 0, out.String(), errOut.String()
}

// An init that fails leaves the module as it was: refused before it
// writes (a hand-written manifest where it would generate one), failing
// at the roles step (after the Go code was generated, before anything
// was put in place), or failing at go mod tidy (after everything was).
func TestInitLeavesNothingOnFailure(t *testing.T) {
	t.Parallel()
	base := operatorModule(t, t.TempDir())
	tests := []struct {
		name    string
		files   map[string]string
		env     []string
		wantErr string
	}{
		{
			name:    "a hand-written kustomization",
			files:   map[string]string{"deploy/kustomization.yaml": "resources: [mine.yaml]\n"},
			wantErr: "the module already has deploy/kustomization.yaml: init writes a new operator into a module without them",
		},
		{
			name:    "a hand-written CRD of the API's name",
			files:   map[string]string{"deploy/crd/example.com_quizzes.yaml": "kind: CustomResourceDefinition\n"},
			wantErr: "the module already has deploy/crd/example.com_quizzes.yaml",
		},
		{
			name:    "roles that fail",
			files:   map[string]string{"extra.go": "package main\n\n// +kubebuilder:rbac:groups=example.com,resources=quizzes\n"},
			wantErr: "controller-gen rbac",
		},
		{
			name:    "go mod tidy that fails",
			files:   map[string]string{"tools/tools.go": "package tools\n\nimport _ \"example.invalid/nope\"\n"},
			env:     []string{"GOPROXY=off", "GOFLAGS=-mod=mod"},
			wantErr: "go mod tidy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "op")
			require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
			for rel, text := range tt.files {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, _, stderr := apigenIn(t, dir, tt.env, "init", "-name", "quiz-operator", "-api", "example.com/v1/Quiz")
			assert.Equal(t, 1, code, "stderr: %s", stderr)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
		})
	}
}

// init works in a module of a workspace whose go.mod lacks what the new
// operator needs until init's go mod tidy, for a kind whose plural
// controller-gen and client-gen make differently: its CRD, its role and
// its client name one resource.
func TestInitInWorkspace(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	dir := operatorModule(t, work)
	require.NoError(t, os.WriteFile(filepath.Join(work, "go.work"), []byte("go 1.26.0\n\nuse ./op\n"), 0o644))
	code, stdout, stderr := apigenIn(t, dir, []string{"GOWORK=" + filepath.Join(work, "go.work"), "GOFLAGS="}, "init", "-name", "quiz-operator", "-api", "example.com/v1/Quiz")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	got := tree(t, dir)
	assert.Contains(t, got["deploy/crd/example.com_quizzes.yaml"], "    plural: quizzes\n")
	assert.Contains(t, got["deploy/role.yaml"], "- quizzes\n")
	assert.Equal(t, []string{"patch", "update"}, clusterRoleVerbs(t, got["deploy/role.yaml"], "example.com", "quizzes/status"), "the role's verbs of the status")
	assert.Contains(t, got["generated/clientset/versioned/typed/example/v1/quiz.go"], `"quizzes"`)
	assert.Contains(t, got["controller.go"], ".Quizes(key.Namespace)", "client-gen's method")
	assert.Regexp(t, `apigen: the workspace cannot resolve an import of [^\n]*\(.*(no required module provides|cannot find module providing|from implicitly required module|missing go.sum entry)[^\n]*\): [^\n]*outside the workspace \(GOWORK=off\)`, stderr,
		"the fallback outside the workspace says why, in one line")
}

// The import names init checks the API's alias against are those of the
// Go files it writes and of those apigen create adds to package main
// later (a webhook's test imports k8s.io/api/admission/v1), as rendered
// for the API (the API package's own import aside), and those of the
// generated clients.
func TestInitImportedAs(t *testing.T) {
	t.Parallel()
	s := &scaffold{Name: "op", Webhooks: true}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	for alias, want := range map[string]string{
		"cache":        "k8s.io/client-go/tools/cache",
		"field":        "k8s.io/apimachinery/pkg/util/validation/field",
		"metav1":       "k8s.io/apimachinery/pkg/apis/meta/v1",
		"admissionapi": "k8s.io/api/admission/v1",
		"examplev1":    "",
		"corev1":       "", // only without -api
	} {
		got, err := s.importedAs(alias)
		require.NoError(t, err)
		assert.Equal(t, want, got, alias)
	}
}
