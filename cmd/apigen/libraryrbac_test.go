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

// What a block of the library needs of the API server reaches the roles
// of an operator that imports it, from the block's own +kubebuilder:rbac
// markers: an operator using informer/optional may read
// CustomResourceDefinitions without a marker of its own. One that does not
// import it gets no such rule.
func TestRolesOfImportedBlocks(t *testing.T) {
	t.Parallel()
	mod := operatorModule(t, t.TempDir())
	tests := []struct {
		name    string
		main    string
		wantCRD bool
	}{
		{name: "imports informer/optional", wantCRD: true, main: `package main

import "github.com/ctrlkit/ctrlkit/informer/optional"

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

var _ = optional.NewAPIs

func main() {}
`},
		{name: "imports no block with markers", main: `package main

import "github.com/ctrlkit/ctrlkit/queue"

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

var _ = queue.New[string]

func main() {}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "op")
			require.NoError(t, os.CopyFS(dir, os.DirFS(mod)))
			writeFiles(t, dir, map[string]string{"main.go": tt.main})
			code, stdout, stderr := apigen(t, dir, "-out", "", "-crd", "", "-rbac", "deploy", "-rbac-role", "op", "-rbac-paths", ".")
			require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
			var role rbacv1.ClusterRole
			require.NoError(t, yaml.Unmarshal([]byte(tree(t, dir)["deploy/role.yaml"]), &role))
			crds := rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}}
			configMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
			assert.Contains(t, role.Rules, configMaps, "the operator's own marker")
			if tt.wantCRD {
				assert.Contains(t, role.Rules, crds, "the marker of informer/optional")
			} else {
				assert.NotContains(t, role.Rules, crds)
			}
		})
	}
}
