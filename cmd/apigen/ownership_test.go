package main

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commandEnv makes the test binary run main, as the apigen command.
const commandEnv = "APIGEN_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(commandEnv) == "1" {
		main()
	}
	code := m.Run()
	if dir, err := sharedDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// handWritten are the user's files in every directory apigen writes to:
// expansions of the typed client and of the lister, a shared types package
// with deep copies, helpers beside the apply configurations, docs, a
// third-party CRD and a role that apigen does not generate.
var handWritten = map[string]string{
	"apis/common/v1/doc.go": `// Package v1 holds types the API packages share.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
package v1
`,
	"apis/common/v1/types.go": `package v1

// Note is a remark with tags.
type Note struct {
	Text string   ` + "`json:\"text\"`" + `
	Tags []string ` + "`json:\"tags,omitempty\"`" + `
}
`,
	"apis/things/v1/README.md": "# things/v1\n",
	"generated/README.md":      "# Generated code\n\nRun go tool apigen.\n",
	"generated/clientset/versioned/typed/things/v1/thing_expansion.go": `package v1

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ThingExpansion adds methods to ThingInterface.
type ThingExpansion interface {
	Exists(ctx context.Context, name string) (bool, error)
}

// Exists tells whether the Thing called name exists.
func (c *things) Exists(ctx context.Context, name string) (bool, error) {
	_, err := c.Get(ctx, name, metav1.GetOptions{})
	return err == nil, nil
}
`,
	"generated/clientset/versioned/typed/things/v1/fake/fake_thing_expansion.go": `package fake

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exists tells whether the Thing called name exists in the fake.
func (c *fakeThings) Exists(ctx context.Context, name string) (bool, error) {
	_, err := c.Get(ctx, name, metav1.GetOptions{})
	return err == nil, nil
}
`,
	"generated/listers/things/v1/thing_expansion.go": `package v1

import (
	"k8s.io/apimachinery/pkg/labels"

	thingsv1 "example.com/fixture/apis/things/v1"
)

// ThingListerExpansion adds methods to ThingLister.
type ThingListerExpansion interface {
	Count() (int, error)
}

// ThingNamespaceListerExpansion adds methods to ThingNamespaceLister.
type ThingNamespaceListerExpansion interface{}

// Count counts the Things.
func (l *thingLister) Count() (int, error) {
	all, err := l.List(labels.Everything())
	return len(all), err
}

var _ []*thingsv1.Thing
`,
	"generated/applyconfiguration/things/v1/helpers.go": `package v1

// SizedThing is a Thing of a size.
func SizedThing(name, namespace string, size int32) *ThingApplyConfiguration {
	return Thing(name, namespace).WithSpec(ThingSpec().WithSize(size))
}
`,
	"generated/informers/externalversions/README.md": "informers\n",
	"config/crd/kustomization.yaml":                  "resources:\n- example.com_things.yaml\n",
	"config/crd/other.example.org_widgets.yaml": `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.1.0
  name: widgets.other.example.org
spec:
  group: other.example.org
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions: []
`,
	"config/rbac/extra_role.yaml": `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: things-viewer
rules: []
`,
}

// richFixture is the fixture with the hand-written files, its Thing
// holding a Note of the shared types package.
func richFixture(t *testing.T) string {
	t.Helper()
	dir := fixture(t)
	for rel, text := range handWritten {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	types := filepath.Join(dir, "apis/things/v1/types.go")
	data, err := os.ReadFile(types)
	require.NoError(t, err)
	changed := strings.Replace(string(data), `import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"`,
		"import (\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n\tcommonv1 \"example.com/fixture/apis/common/v1\"\n)", 1)
	changed = strings.Replace(changed, "\tLabels []Label `json:\"labels,omitempty\"`\n",
		"\tLabels []Label `json:\"labels,omitempty\"`\n\t// Note is a remark.\n\t// +optional\n\tNote *commonv1.Note `json:\"note,omitempty\"`\n", 1)
	require.NotEqual(t, string(data), changed)
	require.NoError(t, os.WriteFile(types, []byte(changed), 0o644))
	return dir
}

// fileState is what a file is: its bytes, mode and modification time.
type fileState struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
}

// states reads the state of every file under dir, by relative path.
func states(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fileState{data: string(data), mode: info.Mode(), mtime: info.ModTime()}
		return err
	}))
	return out
}

// assertHandWritten checks that every hand-written file is as written.
func assertHandWritten(t *testing.T, dir string) {
	t.Helper()
	for rel, want := range handWritten {
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if assert.NoError(t, err, rel) {
			assert.Equal(t, want, string(got), rel)
		}
	}
}

// assertBuilds checks that the module builds and vets, and holds no
// temporary file of apigen.
func assertBuilds(t *testing.T, dir string) {
	t.Helper()
	goCmd(t, dir, "build", "./...")
	goCmd(t, dir, "vet", "./...")
	for name := range tree(t, dir) {
		assert.NotContains(t, name, "apigen", "no temporary file is left")
	}
}

// apigenCommand runs the test binary as the apigen command in dir, with
// stop (a step and a signal) as APIGEN_TEST_STOP and its temporary files
// in tmp. It returns its standard error and the error of its wait.
func apigenCommand(t *testing.T, dir, tmp, stop string, args ...string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron(commandEnv+"=1", stopEnv+"="+stop, "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	return stderr.String(), err
}

// Regression tests: apigen owns only the files that carry its "Code
// generated ... DO NOT EDIT." line; hand-written expansions, shared types
// with deep copies, docs, foreign CRDs and roles stay byte-identical
// through a run, a -verify and runs killed at random points, and the
// module builds after each.
func TestHandWrittenFilesSurvive(t *testing.T) {
	t.Parallel()
	dir := richFixture(t)
	args := append([]string{"-header", ""}, rbacArgs...)
	code, _, stderr := apigen(t, dir, args...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	generated := tree(t, dir)

	t.Run("hand-written files stay and the expansions are theirs", func(t *testing.T) {
		assertHandWritten(t, dir)
		assert.NotContains(t, generated["generated/clientset/versioned/typed/things/v1/generated_expansion.go"], "ThingExpansion")
		assert.NotContains(t, generated["generated/listers/things/v1/expansion_generated.go"], "ThingListerExpansion")
		assert.Contains(t, generated, "apis/common/v1/zz_generated.deepcopy.go", "the shared types get deep copies")
		assert.Contains(t, generated["apis/common/v1/zz_generated.deepcopy.go"], "func (in *Note) DeepCopy() *Note")
		assert.Contains(t, generated["config/crd/example.com_things.yaml"], "kind: CustomResourceDefinition")
		assert.Contains(t, generated["config/rbac/role.yaml"], "things/status")
		goCmd(t, dir, "mod", "tidy")
		assertBuilds(t, dir)
	})

	// The module in a workspace: the Go code is generated in workspace
	// mode too, and -verify writes nothing.
	t.Run("verify in a workspace", func(t *testing.T) {
		work := t.TempDir()
		mod := filepath.Join(work, "fixture")
		require.NoError(t, os.CopyFS(mod, os.DirFS(dir)))
		require.NoError(t, os.WriteFile(filepath.Join(work, "go.work"), []byte("go 1.26.0\n\nuse ./fixture\n"), 0o644))
		before := states(t, mod)
		code, stdout, stderr := apigen(t, mod, append([]string{"-verify"}, args...)...)
		assert.Equal(t, 0, code, "stderr: %s", stderr)
		assert.Contains(t, stdout, "up to date")
		assert.Equal(t, before, states(t, mod), "bytes, modes and modification times as they were")
	})

	t.Run("a header outside the module", func(t *testing.T) {
		header := filepath.Join(t.TempDir(), "boilerplate.go.txt")
		require.NoError(t, os.WriteFile(header, []byte("// Shared boilerplate.\n"), 0o644))
		code, _, stderr := apigen(t, dir, "-verify", "-header", header, "-out", "", "-crd", "", "-rbac", "config/rbac", "-rbac-role", "things", "-rbac-paths", ".")
		assert.Equal(t, 0, code, "stderr: %s", stderr)
	})

	// The module copies get a type change, so that a run has files to
	// replace, that builds with any mix of old and new generated files.
	generatedState := states(t, dir)
	seed := time.Now().UnixNano()
	if s := os.Getenv("APIGEN_TEST_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (APIGEN_TEST_SEED repeats the kill points)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	generation := []string{"deepcopy-gen", "register-gen", "openapi-gen", "schema", "applyconfiguration-gen",
		"client-gen", "lister-gen", "informer-gen", "crd", "rbac"}
	points := []string{
		generation[rng.IntN(len(generation))] + ":TERM",
		generation[rng.IntN(len(generation))] + ":KILL",
		"commit:" + strconv.Itoa(rng.IntN(3)) + ":KILL",
	}
	for _, stop := range points {
		t.Run("killed at "+stop, func(t *testing.T) {
			mod := t.TempDir()
			require.NoError(t, os.CopyFS(mod, os.DirFS(dir)))
			types := filepath.Join(mod, "apis/things/v1/types.go")
			data, err := os.ReadFile(types)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(types, []byte(strings.Replace(string(data),
				"\tSize int32 `json:\"size,omitempty\"`\n}", "\tSize int32 `json:\"size,omitempty\"`\n\tColor *string `json:\"color,omitempty\"`\n}", 1)), 0o644))
			tmp := t.TempDir()
			stderr, err := apigenCommand(t, mod, tmp, stop, args...)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the run ends by its signal, not %v; stderr: %s", err, stderr)
			status := exit.Sys().(syscall.WaitStatus)
			if strings.HasSuffix(stop, ":KILL") {
				assert.True(t, status.Signaled(), "killed: %v", err)
			} else {
				assert.Equal(t, 128+int(syscall.SIGTERM), exit.ExitCode(), stderr)
				left, err := filepath.Glob(filepath.Join(tmp, "apigen*"))
				require.NoError(t, err)
				assert.Empty(t, left, "SIGTERM removes apigen's temporary files")
			}
			assertHandWritten(t, mod)
			now := states(t, mod)
			for rel, st := range generatedState {
				if rel == "apis/things/v1/types.go" {
					continue
				}
				if _, ok := handWritten[rel]; ok || !strings.HasPrefix(stop, "commit:") {
					assert.Equal(t, st.data, now[rel].data, "%s as it was", rel)
				}
			}
			assertBuilds(t, mod)
		})
	}

}

// Runs that share a CRD directory own only what they generated: the CRDs
// of their own API directory (by the marker that names it, or, as earlier
// versions marked them, by their group) and, for a roles run, its
// role.yaml. Each run's -verify finds its files up to date with the
// others' beside them; a run removes its own stale CRDs and no one
// else's; the user's files, unmarked CRDs among them, stay (apigen
// cannot prove it wrote an unmarked CRD: controller-gen writes the same).
func TestSharedCRDDirectory(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	other := "more/apis/other/v1"
	for _, name := range []string{"doc.go", "types.go"} {
		data, err := os.ReadFile(filepath.Join(dir, "apis/things/v1", name))
		require.NoError(t, err)
		text := strings.ReplaceAll(string(data), "+groupName=example.com", "+groupName=other.example.com")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, other), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, other, name), []byte(text), 0o644))
	}
	crd := func(marker, group, plural string) string {
		return "---\n" + marker + "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n" +
			"  annotations:\n    controller-gen.kubebuilder.io/version: v0.1.0\n  name: " + plural + "." + group + "\n" +
			"spec:\n  group: " + group + "\n  names:\n    kind: X\n    plural: " + plural + "\n"
	}
	user := map[string]string{
		"config/crd/kustomization.yaml":            "resources:\n- example.com_things.yaml\n",
		"config/crd/mine.example.com_gizmos.yaml":  crd("", "mine.example.com", "gizmos"),
		"config/crd/example.com_unmarkeds.yaml":    crd("", "example.com", "unmarkeds"),
		"config/crd/notes.md":                      "# CRDs\n",
		"config/crd/another.example.com_olds.yaml": crd(yamlMarker, "another.example.com", "olds"),
	}
	for rel, text := range user {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
	}
	// Stale files of the runs: a CRD the first run's earlier version
	// wrote, and one the third run wrote, of kinds they no longer have.
	staleA, staleC := "config/crd/example.com_olds.yaml", "config/crd/other.example.com_gones.yaml"
	require.NoError(t, os.WriteFile(filepath.Join(dir, staleA), []byte(crd(yamlMarker, "example.com", "olds")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, staleC), []byte(crd(crdMarker("more/apis"), "other.example.com", "gones")), 0o644))

	runA := []string{}
	runB := []string{"-out", "", "-crd", "", "-rbac", "config/crd", "-rbac-role", "things", "-rbac-paths", "."}
	runC := []string{"-out", "more/generated", "more/apis"}
	for _, args := range [][]string{runA, runB, runC} {
		code, _, stderr := apigen(t, dir, args...)
		require.Equal(t, 0, code, "apigen %q: %s", args, stderr)
	}
	got := tree(t, dir)
	for rel, text := range user {
		assert.Equal(t, text, got[rel], "%s is the user's", rel)
	}
	assert.NotContains(t, got, staleA, "the first run's stale CRD is removed")
	assert.NotContains(t, got, staleC, "the third run's stale CRD is removed")
	assert.True(t, strings.HasPrefix(got["config/crd/example.com_things.yaml"], "---\n"+crdMarker("apis")), "the first run's CRD")
	assert.True(t, strings.HasPrefix(got["config/crd/other.example.com_things.yaml"], "---\n"+crdMarker("more/apis")), "the third run's CRD")
	assert.Contains(t, got["config/crd/role.yaml"], "kind: ClusterRole", "the second run's roles")

	for name, args := range map[string][]string{"first": runA, "second": runB, "third": runC} {
		t.Run("the "+name+" run's files are up to date", func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := apigen(t, dir, append([]string{"-verify"}, args...)...)
			assert.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Contains(t, stdout, "up to date")
		})
	}
}
