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

// A cluster-scoped kind (made so by a user with the markers kubebuilder
// documents) keeps its scope when apigen create api adds a version: the
// new version carries the hub's scope markers, since controller-gen takes
// a CRD's scope from the last version it reads and the scope is
// immutable on a cluster that has the CRD.
func TestCreateAPIKeepsClusterScope(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)

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

// The new version's types carry the hub's scope markers and fields; a
// kind whose markers disagree on its scope is refused.
func TestCreateAPIVersionScopeMarkers(t *testing.T) {
	t.Parallel()
	const nonNamespaced = "// +genclient\n// +genclient:nonNamespaced\n"
	tests := []struct {
		name, genclient, resource, wantErr string
		cluster                            bool
	}{
		{name: "namespaced", genclient: "// +genclient\n", resource: "path=widgets"},
		{name: "cluster", genclient: nonNamespaced, resource: "path=widgets,scope=Cluster", cluster: true},
		{name: "scope without nonNamespaced", genclient: "// +genclient\n", resource: "path=widgets,scope=Cluster", wantErr: "disagree on its scope"},
		{name: "nonNamespaced without scope", genclient: nonNamespaced, resource: "path=widgets", wantErr: "disagree on its scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &scaffold{Name: "widget-operator"}
			require.NoError(t, s.complete("example.com/v1/Widget"))
			s.Module = "example.com/op"
			dir := t.TempDir()
			for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl",
				"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
				src, err := render(tmpl, s)
				require.NoError(t, err)
				if rel == "apis/example/v1/types.go" {
					text := strings.Replace(string(src), "// +genclient\n", tt.genclient, 1)
					text = strings.Replace(text, "resource:path=widgets", "resource:"+tt.resource, 1)
					text = strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
					src = []byte(text + "\n// Size is a type of the user's.\ntype Size struct {\n\tQuantity resource.Quantity `json:\"quantity\"`\n}\n")
					src = []byte(strings.Replace(string(src), "import metav1", "import (\n\t\"k8s.io/apimachinery/pkg/api/resource\"\n\tmetav1", 1))
					src = []byte(strings.Replace(string(src), `"k8s.io/apimachinery/pkg/apis/meta/v1"`, "\"k8s.io/apimachinery/pkg/apis/meta/v1\"\n)", 1))
				}
				p := filepath.Join(dir, filepath.FromSlash(rel))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, src, 0o644))
			}
			op, err := loadOperator(module{root: dir, path: s.Module})
			require.NoError(t, err)
			plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			types := string(plan.files["apis/example/v2/types.go"])
			require.NotEmpty(t, types, "the new version's types")
			assert.Equal(t, tt.cluster, strings.Contains(types, nonNamespaced), "+genclient:nonNamespaced:\n%s", types)
			assert.Equal(t, tt.cluster, strings.Contains(types, "+kubebuilder:resource:path=widgets,scope=Cluster\n"), "scope=Cluster:\n%s", types)
			assert.Regexp(t, "\tSize +Size +`json:\"size,omitempty\"`", types, "the hub's field")
			assert.Contains(t, types, "type Size struct", "the hub's type the field uses")
			assert.Contains(t, types, `"k8s.io/apimachinery/pkg/api/resource"`, "the import the hub's type uses")
			assert.Equal(t, 1, strings.Count(types, "type WidgetSpec struct"), types)
		})
	}
}
