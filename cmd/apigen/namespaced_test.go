package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterScoped makes init's Widget types cluster-scoped, as
// -namespaced=false writes them; other files stay as they are.
func clusterScoped(rel, src string) string {
	if rel != "apis/example/v1/types.go" {
		return src
	}
	src = strings.Replace(src, "// +genclient\n", "// +genclient\n// +genclient:nonNamespaced\n", 1)
	return strings.Replace(src, "+kubebuilder:resource:path=widgets\n", "+kubebuilder:resource:path=widgets,scope=Cluster\n", 1)
}

// init's files of a kind (-api) are those of a namespaced kind, or with
// -namespaced=false those of a cluster-scoped one: its types carry
// +genclient:nonNamespaced and scope=Cluster, and its controller and
// test name no namespace in the clients, apply configuration and test
// object.
func TestInitClusterScopedKindFiles(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		s := &scaffold{Name: "widget-operator", ClusterScoped: cluster}
		require.NoError(t, s.complete("example.com/v1/Widget"))
		s.Module = "example.com/op"
		files := map[string]string{}
		for rel, tmpl := range map[string]string{"types.go": "types.go.tmpl", "controller.go": "controller.go.tmpl", "controller_test.go": "controller_test.go.tmpl"} {
			src, err := render(tmpl, s)
			require.NoError(t, err, rel)
			files[rel] = string(src)
		}
		namespaced := !cluster
		assert.Equal(t, cluster, strings.Contains(files["types.go"], "// +genclient\n// +genclient:nonNamespaced\n"), "cluster-scoped %t: +genclient:nonNamespaced:\n%s", cluster, files["types.go"])
		assert.Equal(t, cluster, strings.Contains(files["types.go"], "// +kubebuilder:resource:path=widgets,scope=Cluster\n"), "cluster-scoped %t: scope=Cluster", cluster)
		assert.Equal(t, namespaced, strings.Contains(files["controller.go"], "widgetac.Widget(key.Name, key.Namespace)"), "cluster-scoped %t:\n%s", cluster, files["controller.go"])
		assert.Equal(t, cluster, strings.Contains(files["controller.go"], "widgetac.Widget(key.Name)"), "cluster-scoped %t", cluster)
		assert.Equal(t, namespaced, strings.Contains(files["controller.go"], ".Widgets(key.Namespace)"), "cluster-scoped %t", cluster)
		assert.Equal(t, cluster, strings.Contains(files["controller.go"], ".Widgets()"), "cluster-scoped %t", cluster)
		assert.Equal(t, namespaced, strings.Contains(files["controller_test.go"], `.Widgets("ns")`), "cluster-scoped %t:\n%s", cluster, files["controller_test.go"])
		assert.Equal(t, cluster, strings.Count(files["controller_test.go"], ".Widgets().") == 2, "cluster-scoped %t", cluster)
	}
}

// init refuses -namespaced=false without -api, where the operator
// reconciles ConfigMaps, and writes nothing.
func TestInitClusterScopedNeedsAnAPI(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	code, _, stderr := apigen(t, dir, "init", "-name", "op", "-namespaced=false")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-namespaced=false needs -api")
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
}

// create api of a new kind makes it namespaced, or cluster-scoped with
// -namespaced=false: its types, controller and controller test are
// those of its scope.
func TestCreateAPIClusterScopedKind(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	for _, tt := range []struct {
		name       string
		namespaced *bool
		cluster    bool
	}{
		{name: "without -namespaced", namespaced: nil},
		{name: "-namespaced", namespaced: &yes},
		{name: "-namespaced=false", namespaced: &no, cluster: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			op, _ := plannedOperator(t, nil)
			p, err := op.planScopedAPI(t.Context(), "example.com/v1/Gadget", tt.namespaced)
			require.NoError(t, err)
			types, ctrl, test := string(p.files["apis/example/v1/gadget_types.go"]), string(p.files["gadget_controller.go"]), string(p.files["gadget_controller_test.go"])
			require.NotEmpty(t, types)
			namespaced := !tt.cluster
			assert.Equal(t, tt.cluster, strings.Contains(types, "// +genclient\n// +genclient:nonNamespaced\n"), "+genclient:nonNamespaced:\n%s", types)
			assert.Equal(t, tt.cluster, strings.Contains(types, "// +kubebuilder:resource:path=gadgets,scope=Cluster\n"), "scope=Cluster")
			assert.Equal(t, namespaced, strings.Contains(ctrl, "gadgetac.Gadget(key.Name, key.Namespace)"), ctrl)
			assert.Equal(t, tt.cluster, strings.Contains(ctrl, "gadgetac.Gadget(key.Name)"), ctrl)
			assert.Equal(t, namespaced, strings.Contains(ctrl, ".Gadgets(key.Namespace)"), ctrl)
			assert.Equal(t, tt.cluster, strings.Contains(ctrl, ".Gadgets(), key, status"), ctrl)
			assert.Equal(t, namespaced, strings.Count(test, `.Gadgets("ns").`) == 2, test)
			assert.Equal(t, tt.cluster, strings.Count(test, ".Gadgets().") == 2, test)
		})
	}
}

// create api of a new version has its kind's scope: -namespaced, where
// given, must repeat it, or the command is refused, naming the kind's
// scope, with nothing planned.
func TestCreateAPIVersionHasItsKindsScope(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	for _, tt := range []struct {
		name       string
		cluster    bool // Widget's v1
		namespaced *bool
		wantErr    string
	}{
		{name: "a namespaced kind without -namespaced"},
		{name: "a namespaced kind with -namespaced", namespaced: &yes},
		{name: "a namespaced kind with -namespaced=false", namespaced: &no,
			wantErr: "-namespaced=false: Widget is namespaced (no +genclient:nonNamespaced and scope=Cluster in apis/example/v1/types.go), and a new version has its kind's scope, which a cluster that has the CRD cannot change: leave -namespaced out; nothing written"},
		{name: "a cluster-scoped kind without -namespaced", cluster: true},
		{name: "a cluster-scoped kind with -namespaced=false", cluster: true, namespaced: &no},
		{name: "a cluster-scoped kind with -namespaced", cluster: true, namespaced: &yes,
			wantErr: "-namespaced=true: Widget is cluster-scoped (+genclient:nonNamespaced and scope=Cluster in apis/example/v1/types.go), and a new version has its kind's scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var edit func(rel, src string) string
			if tt.cluster {
				edit = clusterScoped
			}
			op, _ := plannedOperator(t, edit)
			p, err := op.planScopedAPI(t.Context(), "example.com/v2/Widget", tt.namespaced)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, p, "nothing planned")
				return
			}
			require.NoError(t, err)
			types := string(p.files["apis/example/v2/types.go"])
			assert.Equal(t, tt.cluster, strings.Contains(types, "+genclient:nonNamespaced"), types)
			assert.Equal(t, tt.cluster, strings.Contains(types, "scope=Cluster"), types)
		})
	}
}
