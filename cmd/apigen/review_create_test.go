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

// review: a cluster-scoped kind (as a user makes init's kind cluster-scoped,
// the markers kubebuilder documents) gets a second version with
// apigen create api: the new version's types are namespaced, and the
// CRD that controller-gen then writes takes the scope of the last version
// it reads, so the kind's CRD silently becomes Namespaced (an immutable
// field: kubectl apply -k fails on a cluster that has the CRD; on a new
// one every v1 client of the cluster-scoped kind breaks).
func TestReviewCreateAPIKeepsClusterScope(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)

	// The user makes Widget cluster-scoped, and adapts the controller.
	edit := func(rel string, pairs ...string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := string(b)
		for i := 0; i < len(pairs); i += 2 {
			require.Contains(t, s, pairs[i], rel)
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	edit("apis/example/v1/types.go",
		"// +genclient\n", "// +genclient\n// +genclient:nonNamespaced\n",
		"+kubebuilder:resource:path=widgets", "+kubebuilder:resource:path=widgets,scope=Cluster")
	edit("controller.go", "(key.Name, key.Namespace)", "(key.Name)", "Widgets(key.Namespace)", "Widgets()")
	gen := exec.CommandContext(t.Context(), "go", "generate", "./...")
	gen.Dir = dir
	gen.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "go generate:\n%s", out)
	crd, err := os.ReadFile(filepath.Join(dir, "deploy/crd/example.com_widgets.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(crd), "scope: Cluster", "the user's cluster-scoped CRD")

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	crd, err = os.ReadFile(filepath.Join(dir, "deploy/crd/example.com_widgets.yaml"))
	require.NoError(t, err)
	scope := regexp.MustCompile(`(?m)^  scope: .*$`).FindString(string(crd))
	assert.Equal(t, "  scope: Cluster", scope, "the CRD of a cluster-scoped kind after create api of a second version")
}
