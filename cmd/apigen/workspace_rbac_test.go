package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// An operator developed in a Go workspace with a checkout of ctrlkit
// (go.work: "use ./op ../ctrlkit", the usual way to work on both) gets the
// rules of the library packages it imports, although in workspace mode
// the ctrlkit module is a main module too: the generated ClusterRole has
// the customresourcedefinitions rule of informer/optional.
func TestLibraryRBACInAWorkspace(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod := operatorModule(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "ws")
	op := filepath.Join(dir, "op")
	require.NoError(t, os.CopyFS(op, os.DirFS(mod)))
	writeFiles(t, op, map[string]string{"main.go": `package main

import "github.com/ctrlkit/ctrlkit/informer/optional"

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

var _ = optional.NewAPIs

func main() {}
`})
	gowork := filepath.Join(dir, "go.work")
	require.NoError(t, os.WriteFile(gowork, []byte("go 1.26.0\n\nuse (\n\t./op\n\t"+root+"\n)\n"), 0o644))
	code, stdout, stderr := apigenIn(t, op, []string{"GOWORK=" + gowork, "GOFLAGS="}, "-out", "", "-crd", "", "-rbac", "deploy", "-rbac-role", "op", "-rbac-paths", ".")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal([]byte(tree(t, op)["deploy/role.yaml"]), &role))
	configMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
	require.Contains(t, role.Rules, configMaps, "the operator's own marker")
	crds := rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}}
	assert.Contains(t, role.Rules, crds, "the marker of informer/optional, imported from the ctrlkit module of the workspace")
}
