package main

import (
	"os/exec"
	"regexp"
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
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget", namespaced: tt.namespaced})
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
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget", namespaced: tt.namespaced})
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

// create webhook's tests of a cluster-scoped kind's webhooks send an
// object without a namespace, as the API server does; those of a
// namespaced kind's, one in a namespace.
func TestCreateWebhookTestsOfClusterScopedKind(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		var edit func(rel, src string) string
		if cluster {
			edit = clusterScoped
		}
		op, _ := plannedOperator(t, edit)
		p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true, validation: true})
		require.NoError(t, err)
		for _, rel := range []string{"widget_defaulting_webhook_test.go", "widget_validation_webhook_test.go"} {
			test := string(p.files[rel])
			require.NotEmpty(t, test, rel)
			assert.Equal(t, !cluster, strings.Contains(test, `metav1.ObjectMeta{Name: "one", Namespace: "ns"}`), "cluster-scoped %t: %s:\n%s", cluster, rel, test)
			assert.Equal(t, cluster, strings.Contains(test, `metav1.ObjectMeta{Name: "one"}`), "cluster-scoped %t: %s", cluster, rel)
		}
	}
}

// An operator that init -namespaced=false made, with a second
// cluster-scoped kind from create api -namespaced=false and that kind's
// defaulting and validating webhooks, builds, passes go vet and its
// generated tests (the controllers' over the fake clientset, the
// webhooks'), and its CRDs are cluster-scoped, with the kinds' rules in
// the ClusterRole, which the operator's informers of all namespaces need.
// A new version of a cluster-scoped kind that -namespaced says is
// namespaced is refused, writing nothing.
func TestCreateClusterScopedKinds(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	for _, args := range [][]string{
		{"init", "-name", "widget-operator", "-api", "example.com/v1/Widget", "-namespaced=false"},
		{"create", "api", "-api", "example.com/v1/Gadget", "-namespaced=false"},
		{"create", "webhook", "-kind", "Gadget", "-validation", "-defaulting"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget", "-namespaced")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stderr, "-namespaced=true: Widget is cluster-scoped")
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")

	files := tree(t, dir)
	scope := regexp.MustCompile(`(?m)^  scope: .*$`)
	for _, crd := range []string{"deploy/crd/example.com_widgets.yaml", "deploy/crd/example.com_gadgets.yaml"} {
		assert.Equal(t, "  scope: Cluster", scope.FindString(files[crd]), crd)
	}
	clusterRole := ""
	for _, doc := range strings.Split(files["deploy/role.yaml"], "\n---\n") {
		if strings.Contains(doc, "\nkind: ClusterRole\n") {
			clusterRole = doc
		}
	}
	assert.Contains(t, clusterRole, "- gadgets\n", "the ClusterRole of deploy/role.yaml:\n%s", files["deploy/role.yaml"])
	assert.Contains(t, clusterRole, "- widgets\n", "the ClusterRole")
	for _, f := range []struct{ file, want string }{
		{"controller.go", "widgetac.Widget(key.Name)."},
		{"gadget_controller.go", "gadgetac.Gadget(key.Name)."},
		{"gadget_validation_webhook_test.go", `metav1.ObjectMeta{Name: "one"}`},
	} {
		assert.Contains(t, files[f.file], f.want, f.file)
	}
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	}
}
