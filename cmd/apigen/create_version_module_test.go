package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editModuleFile replaces pairs of strings in the module's file rel, each of
// which must be there.
func editModuleFile(t *testing.T, dir, rel string, pairs ...string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	for i := 0; i < len(pairs); i += 2 {
		require.Contains(t, s, pairs[i], rel)
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

// goIn runs go with args in dir.
func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// A kind whose plural the user chose (+kubebuilder:resource:path and
// +resourceName, for a plural flect gets wrong or a name of the user's)
// keeps it when apigen create api adds a version: the new version's
// markers must name the hub's plural, or controller-gen takes the new
// version's default plural for the CRD (a CRD of another name, the
// user's CRD left with one version) and client-gen the new version's
// resource.
func TestCreateAPIVersionKeepsPlural(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	editModuleFile(t, dir, "apis/example/v1/types.go",
		"+kubebuilder:resource:path=widgets\n", "+kubebuilder:resource:path=widgetz\n",
		"+resourceName=widgets\n", "+resourceName=widgetz\n")
	goIn(t, dir, "generate", "./...")
	require.FileExists(t, filepath.Join(dir, "deploy/crd/example.com_widgetz.yaml"), "the user's CRD before create api")
	if err := os.Remove(filepath.Join(dir, "deploy/crd/example.com_widgets.yaml")); err != nil {
		require.ErrorIs(t, err, os.ErrNotExist)
	}

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var crds []string
	for rel := range tree(t, dir) {
		if strings.HasPrefix(rel, "deploy/crd/") {
			crds = append(crds, rel)
		}
	}
	assert.Equal(t, []string{"deploy/crd/example.com_widgetz.yaml"}, crds, "the CRDs after create api of a second version")
	crd, err := os.ReadFile(filepath.Join(dir, "deploy/crd/example.com_widgetz.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(crd), "name: v2", "the user's CRD has the new version")
	types, err := os.ReadFile(filepath.Join(dir, "apis/example/v2/types.go"))
	require.NoError(t, err)
	assert.Contains(t, string(types), "+resourceName=widgetz\n", "the new version's client resource")
}

// A kind whose +kubebuilder:resource marker has short names and
// categories (as kubebuilder documents, and many operators' kinds have)
// keeps them in its CRD once apigen create api adds a version, on every
// generation. controller-gen sets a CRD's shortNames and categories (as
// its plural and scope) from the resource marker of whichever version it
// applies last, in the order of a map: the new version carries init's
// marker, not the hub's, so each go generate flips the CRD between having
// the short names and not (`kubectl get wg` works, or not, after each).
func TestCreateAPIVersionKeepsShortNames(t *testing.T) {
	dir := widgetOperator(t)
	editModuleFile(t, dir, "apis/example/v1/types.go",
		"+kubebuilder:resource:path=widgets\n", "+kubebuilder:resource:path=widgets,shortName=wg,categories=example\n")
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)

	// The CRD step of go generate, run again as a user's go generate runs
	// it after each change of the types.
	t.Chdir(dir)
	var missing int
	const runs = 8
	for i := range runs {
		loads, closeLoads, err := newPackageLoads(t.Context(), dir, "")
		require.NoError(t, err)
		out := t.TempDir()
		err = generateCRDs(loads, "apis", out)
		closeLoads()
		require.NoError(t, err)
		crd, err := os.ReadFile(filepath.Join(out, "example.com_widgets.yaml"))
		require.NoError(t, err)
		if !strings.Contains(string(crd), "shortNames:\n    - wg\n") || !strings.Contains(string(crd), "categories:\n    - example\n") {
			missing++
			t.Logf("generation %d: the CRD has lost the short names or categories of the hub's marker", i)
		}
	}
	assert.Zero(t, missing, "of %d generations of the CRD after create api of a second version, %d lost the kind's short names or categories", runs, missing)
}
