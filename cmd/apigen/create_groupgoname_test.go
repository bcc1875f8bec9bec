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

// playthingsPackage is gadgetsPackage (toys.example.com in apis/gadgets/v1)
// with +groupGoName=Playthings in its doc.go: client-gen, lister-gen and
// informer-gen name the group's methods Playthings() and PlaythingsV1().
var playthingsPackage = map[string]string{
	"apis/gadgets/v1/doc.go":   strings.Replace(gadgetsPackage["apis/gadgets/v1/doc.go"], "+groupName=toys.example.com\n", "+groupName=toys.example.com\n// +groupGoName=Playthings\n", 1),
	"apis/gadgets/v1/types.go": gadgetsPackage["apis/gadgets/v1/types.go"],
}

// The Go name of a group's methods in the generated clientset and
// informer factory is client-gen's and informer-gen's: the +groupGoName
// of its packages where they have one, else the group's first label
// capitalized. A new kind of a group with +groupGoName=Playthings gets
// main.go wiring and a controller test that call factory.Playthings() and
// client.PlaythingsV1(), not Toys().
func TestCreateAPIKindUsesGroupGoName(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, playthingsPackage)
	p, err := op.planAPI(t.Context(), apiRequest{api: "toys.example.com/v1/Gizmo"})
	require.NoError(t, err)
	mainGo := string(p.edits["main.go"])
	assert.Contains(t, mainGo, "factory.Playthings().V1().Gizmos()", "main.go's wiring of the Gizmo controller:\n%s", mainGo)
	test := string(p.files["gizmo_controller_test.go"])
	assert.Contains(t, test, "client.PlaythingsV1().Gizmos(", "the controller test's client calls:\n%s", test)
	ctrl := string(p.files["gizmo_controller.go"])
	assert.Contains(t, ctrl, "r.client.PlaythingsV1().Gizmos(", "the controller's client calls:\n%s", ctrl)
}

// client-gen, lister-gen and informer-gen take a group version's Go name
// from the +groupGoName of its own package's doc.go: a new package of a
// group that has one (a new version; a new kind at a new version) gets
// it too, beside +groupName, or the generated clientset would have
// PlaythingsV1() beside ToysV2() and the informer factory two names for
// one group.
func TestCreateAPIVersionKeepsGroupGoName(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, playthingsPackage)
	for api, doc := range map[string]string{
		"toys.example.com/v2/Gadget": "apis/gadgets/v2/doc.go",
		"toys.example.com/v3/Gizmo":  "apis/gadgets/v3/doc.go",
	} {
		p, err := op.planAPI(t.Context(), apiRequest{api: api})
		require.NoError(t, err, api)
		src := string(p.files[doc])
		assert.Contains(t, src, "// +groupName=toys.example.com\n", "%s: the new package's doc.go:\n%s", api, src)
		assert.Contains(t, src, "// +groupGoName=Playthings\n", "%s: the new package's doc.go:\n%s", api, src)
	}
}

// In a module, an operator with a group whose packages have a
// +groupGoName gets a new kind and a new version of the group: both
// build against the generated clientset and informer factory, which name
// the group after +groupGoName, and the operator's tests pass.
func TestCreateInGroupWithGroupGoNameBuilds(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	for rel, src := range playthingsPackage {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(src), 0o644))
	}
	for _, args := range [][]string{
		{"create", "api", "-api", "toys.example.com/v1/Gizmo"},
		{"create", "api", "-api", "toys.example.com/v2/Gizmo"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	files := tree(t, dir)
	assert.Contains(t, files["generated/clientset/versioned/clientset.go"], "PlaythingsV2()")
	assert.NotContains(t, files["generated/clientset/versioned/clientset.go"], "ToysV")
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go test .:\n%s", out)
}

// A group whose packages name their Go group +groupGoName=Playthings
// (toys.example.com in apis/gadgets: its clients are PlaythingsV1(), its
// informers Playthings()) shares no Go name with a new group
// toys.example.org, whose packages are apis/toys and whose methods
// Toys()/ToysV1(): create api takes the new group, comparing its Go name
// and directory with each existing group's, not its first label.
func TestCreateAPINewGroupBesideGroupGoName(t *testing.T) {
	t.Parallel()
	extra := map[string]string{}
	for rel, src := range gadgetsPackage {
		extra[rel] = strings.Replace(src, "// +groupName=toys.example.com\n", "// +groupName=toys.example.com\n// +groupGoName=Playthings\n", 1)
	}
	op, _ := initOperator(t, extra)
	p, err := op.planAPI(t.Context(), apiRequest{api: "toys.example.org/v1/Robot"})
	require.NoError(t, err, "a new group whose methods (Toys()) and directory (apis/toys) are no other group's")
	assert.Contains(t, p.files, "apis/toys/v1/types.go")
	assert.Contains(t, string(p.edits["main.go"]), "factory.Toys().V1().Robots()")

	// The existing group's Go name is taken.
	_, err = op.planAPI(t.Context(), apiRequest{api: "playthings.example.org/v1/Robot"})
	assert.ErrorContains(t, err, "would be Playthings(), as toys.example.com's are")
}
