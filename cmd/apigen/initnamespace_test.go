package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// An init-made operator moved to another namespace with generate.go's
// -deploy-namespace has every namespaced object of its kustomization in a
// namespace the kustomization creates: no Role stays in the old one (the
// Lease's Role is the Deployment's own, in its namespace), so kubectl
// apply -k works.
func TestInitOperatorMovesWithDeployNamespace(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "op", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "stderr: %s", stderr)

	files := tree(t, dir)
	var args []string
	for _, line := range strings.Split(files["generate.go"], "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate go tool apigen "); ok {
			args = strings.Fields(strings.ReplaceAll(rest, "-deploy-namespace op-system", "-deploy-namespace team-a"))
		}
	}
	require.Contains(t, args, "team-a", "generate.go: %s", files["generate.go"])
	code, _, stderr = apigenIn(t, dir, nil, args...)
	require.Equal(t, 0, code, "stderr: %s", stderr)

	out, err := exec.Command(kubectl, "kustomize", filepath.Join(dir, "deploy")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	created := map[string]bool{}
	type object struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
	}
	var objects []object
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o object
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o))
		if o.Kind == "Namespace" {
			created[o.Metadata.Name] = true
		}
		objects = append(objects, o)
	}
	require.True(t, created["team-a"], "the kustomization creates the new namespace")
	for _, o := range objects {
		if o.Metadata.Namespace != "" {
			assert.True(t, created[o.Metadata.Namespace],
				"%s %s/%s is in a namespace the kustomization does not create (init's main.go marker still names it): kubectl apply -k fails with namespaces %q not found",
				o.Kind, o.Metadata.Namespace, o.Metadata.Name, o.Metadata.Namespace)
		}
	}
}
