package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apigen runs the command in dir, as a process of its own (this test binary
// as apigen, so that tests need not change the working directory and may run
// in parallel), and returns its exit status and output.
func apigen(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv + "=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, "running apigen; stderr: %s", errOut.String())
	return 0, out.String(), errOut.String()
}

// commandEnviron is the environment of a run of apigen in a test: this
// process's, then extra.
func commandEnviron(extra ...string) []string {
	return append(os.Environ(), extra...)
}

// fixture copies testdata/fixture, a module with one API package, into a
// new directory.
func fixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := os.CopyFS(dst, os.DirFS("testdata/fixture"))
	require.NoError(t, err)
	return dst
}

// tree reads every file under dir, by relative path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return files
}

// dirs lists every directory under dir, by relative path.
func dirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}))
	return out
}

func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
}

var rbacArgs = []string{"-rbac", "config/rbac", "-rbac-role", "things", "-rbac-paths", "."}

// One module taken through what a user does: generate before the first go
// mod tidy, build and test against the generated fake, regenerate, change
// the types and verify.
func TestGenerateAndVerify(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	before := tree(t, dir)
	code, stdout, stderr := apigen(t, dir, rbacArgs...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "for things/v1")
	generated := tree(t, dir)

	t.Run("go.mod and go.sum are go mod tidy's to complete", func(t *testing.T) {
		assert.Equal(t, before["go.mod"], generated["go.mod"])
		assert.Equal(t, before["go.sum"], generated["go.sum"])
	})

	t.Run("every generated file is there", func(t *testing.T) {
		for _, f := range []string{
			"apis/things/v1/zz_generated.deepcopy.go",
			"apis/things/v1/zz_generated.register.go",
			"generated/applyconfiguration/internal/internal.go",
			"generated/applyconfiguration/things/v1/thing.go",
			"generated/clientset/versioned/clientset.go",
			"generated/clientset/versioned/fake/clientset_generated.go",
			"generated/listers/things/v1/thing.go",
			"generated/informers/externalversions/factory.go",
			"config/crd/example.com_things.yaml",
			"config/rbac/role.yaml",
		} {
			assert.Contains(t, generated, f)
		}
		crd := generated["config/crd/example.com_things.yaml"]
		for _, want := range []string{"kind: CustomResourceDefinition", "name: things.example.com", "specReplicasPath: .spec.size",
			"jsonPath: .spec.size", "minimum: 1", "default: 1", "x-kubernetes-list-type: map", "controller-gen.kubebuilder.io/version: v"} {
			assert.Contains(t, crd, want)
		}
		assert.Contains(t, generated["config/rbac/role.yaml"], "things/status")
		assert.Contains(t, generated["generated/applyconfiguration/internal/internal.go"], "name: com.example.fixture.apis.things.v1.Thing",
			"the apply configurations embed the Thing's schema")
		for name := range generated {
			assert.NotContains(t, name, "apigentmp", "no temporary file is left")
		}
	})

	t.Run("the generated code builds and its fake serves server-side apply", func(t *testing.T) {
		goCmd(t, dir, "mod", "tidy")
		goCmd(t, dir, "vet", "./...")
		goCmd(t, dir, "test", "-count=1", "./...")
	})

	// A run writes the same files every time: -verify regenerates and
	// compares.
	t.Run("verify passes when nothing is stale, and writes nothing", func(t *testing.T) {
		before := states(t, dir)
		code, stdout, stderr := apigen(t, dir, append([]string{"-verify"}, rbacArgs...)...)
		assert.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, "up to date")
		assert.Equal(t, before, states(t, dir), "bytes, modes and modification times as they were")
	})

	types := filepath.Join(dir, "apis/things/v1/types.go")
	original, err := os.ReadFile(types)
	require.NoError(t, err)
	edit := func(t *testing.T, from, to string) {
		t.Helper()
		changed := strings.ReplaceAll(string(original), from, to)
		require.NotEqual(t, string(original), changed)
		require.NoError(t, os.WriteFile(types, []byte(changed), 0o644))
		t.Cleanup(func() { require.NoError(t, os.WriteFile(types, original, 0o644)) })
	}

	t.Run("verify lists what is stale and writes nothing", func(t *testing.T) {
		edit(t, "\tSize int32 `json:\"size,omitempty\"`\n}", "\tSize int32 `json:\"size,omitempty\"`\n\tColor *string `json:\"color,omitempty\"`\n}")
		controller := filepath.Join(dir, "controller.go")
		data, err := os.ReadFile(controller)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(controller, bytes.Replace(data, []byte("verbs=patch"), []byte("verbs=patch;update"), 1), 0o644))
		t.Cleanup(func() { require.NoError(t, os.WriteFile(controller, data, 0o644)) })
		before := tree(t, dir)
		code, _, stderr := apigen(t, dir, append([]string{"-verify"}, rbacArgs...)...)
		assert.Equal(t, 1, code)
		for _, f := range []string{"config/crd/example.com_things.yaml", "apis/things/v1/zz_generated.deepcopy.go",
			"generated/applyconfiguration/things/v1/thingstatus.go", "config/rbac/role.yaml"} {
			assert.Contains(t, stderr, "changed: "+f)
		}
		assert.Equal(t, before, tree(t, dir), "nothing written")
	})

	t.Run("a failed run leaves the generated files as they were", func(t *testing.T) {
		edit(t, "\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n", "")
		before := tree(t, dir)
		code, _, stderr := apigen(t, dir, rbacArgs...)
		assert.Equal(t, 1, code)
		assert.Equal(t, "apigen: lister-gen failed: unable to find ObjectMeta for any types in package example.com/fixture/apis/things/v1\n", stderr,
			"the generator's fatal error, and not the process, ends the run")
		assert.Equal(t, before, tree(t, dir))
	})
}

// Bad input is refused with a message that says what to do, and writes
// nothing.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     func(t *testing.T, dir string)
		args     []string
		wantCode int
		wantErr  string
	}{
		{
			name: "an API package without the OpenAPI tag",
			edit: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "apis/things/v1/doc.go")
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte("// +k8s:openapi-gen=true\n"), nil, 1), 0o644))
			},
			wantCode: 1, wantErr: `needs the line "+k8s:openapi-gen=true"`,
		},
		{
			name: "no API package",
			args: []string{"config"},
			edit: func(t *testing.T, dir string) {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "config/a/b"), 0o755))
			},
			wantCode: 1, wantErr: `no API package under config`,
		},
		{name: "a missing API directory", args: []string{"nowhere"}, wantCode: 1, wantErr: "reading the API directory"},
		{name: "a directory outside the module", args: []string{"-out", "../elsewhere"}, wantCode: 1, wantErr: "is outside the module"},
		{name: "roles without a name", args: []string{"-rbac", "config/rbac"}, wantCode: 2, wantErr: "-rbac needs -rbac-role"},
		{name: "nothing asked", args: []string{"-out", "", "-crd", ""}, wantCode: 1, wantErr: "nothing to generate"},
		{name: "two API directories", args: []string{"apis", "more"}, wantCode: 2, wantErr: "one API directory expected"},
		{name: "an unknown flag", args: []string{"-colour"}, wantCode: 2, wantErr: "flag provided but not defined"},
		{
			// The Go code and the CRDs are generated before the roles fail:
			// the directories made for them go too.
			name: "roles from a package that does not parse, in a module never generated",
			args: []string{"-rbac", "config/rbac", "-rbac-role", "things", "-rbac-paths", "./broken"},
			edit: func(t *testing.T, dir string) {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "broken"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "broken/broken.go"), []byte("package broken\n\nfunc {\n"), 0o644))
			},
			wantCode: 1, wantErr: "apigen: controller-gen rbac: the packages did not load (see the errors above)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, _, stderr := apigen(t, dir, tt.args...)
			assert.Equal(t, tt.wantCode, code)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
		})
	}

	t.Run("outside any module", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := apigen(t, t.TempDir())
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "no go.mod")
	})
}

// apigen collects its garbage lazily unless the user sets GOGC.
func TestGCPercent(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    int
		wantSet bool
	}{
		{env: nil, want: lazyGC, wantSet: true},
		{env: map[string]string{"GOMEMLIMIT": "1GiB"}, want: lazyGC, wantSet: true},
		{env: map[string]string{"GOGC": "100"}},
		{env: map[string]string{"GOGC": "off"}},
	}
	for _, tt := range tests {
		got, set := gcPercent(func(k string) string { return tt.env[k] })
		assert.Equal(t, tt.wantSet, set, "%v", tt.env)
		assert.Equal(t, tt.want, got, "%v", tt.env)
	}
}

// The default -rbac-paths, ./..., works on a module never generated: the
// client packages the run generates match it only in the go command's
// overlay, where the roles' generator cannot read them.
func TestDefaultRBACPaths(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	code, _, stderr := apigen(t, dir, "-rbac", "config/rbac", "-rbac-role", "things")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	role, err := os.ReadFile(filepath.Join(dir, "config/rbac/role.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(role), "- things/status")
}
