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

// gadgetsPackage is an API package of the group toys.example.com in the
// directory apis/gadgets/v1, not the group's first label: apigen
// generates for it, naming the generated group packages after the
// directory (generated/.../gadgets/v1) and their methods after the label
// (ToysV1()).
var gadgetsPackage = map[string]string{
	"apis/gadgets/v1/doc.go": "// Package v1 is the toys.example.com API.\n//\n// +k8s:deepcopy-gen=package\n// +k8s:openapi-gen=true\n// +groupName=toys.example.com\npackage v1\n",
	"apis/gadgets/v1/types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=gadgets
// +resourceName=gadgets

// Gadget is a toy.
type Gadget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Gadget ` + "`json:\"items\"`" + `
}
`,
}

// The webhooks of a kind whose package directory is not its group's first
// label (Gadget of toys.example.com in apis/gadgets/v1) import the kind's
// own package, apis/gadgets/v1, under a name made from its directory.
func TestCreateWebhookImportsTheKindsPackageDirectory(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, gadgetsPackage)
	p, err := op.planWebhooks(webhookRequest{kind: "Gadget", defaulting: true})
	require.NoError(t, err)
	for _, f := range []string{"gadget_defaulting_webhook.go", "gadget_defaulting_webhook_test.go"} {
		src := string(p.files[f])
		assert.Contains(t, src, `gadgetsv1 "example.com/op/apis/gadgets/v1"`, "%s imports the package of the kind Gadget, apis/gadgets/v1:\n%s", f, src)
		assert.NotContains(t, src, "apis/toys", f)
	}
}

// create api for a group whose packages are in a directory other than its
// first label writes the new version or kind there (apis/gadgets/...), and
// a new kind's controller uses the generated packages of that directory;
// a new group whose first label is that group's is refused, as one whose
// directory is another group's is.
func TestCreateAPIKeepsTheGroupsDirectory(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, gadgetsPackage)

	p, err := op.planAPI(t.Context(), "toys.example.com/v2/Gadget")
	require.NoError(t, err)
	assert.Contains(t, p.files, "apis/gadgets/v2/types.go")
	assert.Contains(t, string(p.files["apis/gadgets/v2/gadget_conversion.go"]), `gadgetsv1 "example.com/op/apis/gadgets/v1"`)
	for f := range p.files {
		assert.NotContains(t, f, "apis/toys", "a new file outside the group's directory")
	}

	p, err = op.planAPI(t.Context(), "toys.example.com/v1/Gizmo")
	require.NoError(t, err)
	assert.Contains(t, p.files, "apis/gadgets/v1/gizmo_types.go")
	ctrl := string(p.files["gizmo_controller.go"])
	for _, want := range []string{
		`gadgetsv1 "example.com/op/apis/gadgets/v1"`,
		`"example.com/op/generated/applyconfiguration/gadgets/v1"`,
		`"example.com/op/generated/informers/externalversions/gadgets/v1"`,
		"r.client.ToysV1().Gizmos(",
	} {
		assert.Contains(t, ctrl, want)
	}
	assert.Contains(t, string(p.edits["main.go"]), "factory.Toys().V1().Gizmos()")

	_, err = op.planAPI(t.Context(), "toys.example.org/v1/Robot")
	assert.ErrorContains(t, err, "the group toys.example.org has the first label of toys.example.com")
	_, err = op.planAPI(t.Context(), "gadgets.example.com/v1/Robot")
	assert.ErrorContains(t, err, "the group gadgets.example.com has its packages in apis/gadgets, which toys.example.com's are in")
}

// In a module, an operator with a group whose packages are in a directory
// other than its first label gets a webhook of its kind and a new kind of
// the group: both build, and the operator's tests pass.
func TestCreateInGroupDirectoryBuilds(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
	for rel, src := range gadgetsPackage {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(src), 0o644))
	}
	for _, args := range [][]string{
		{"create", "webhook", "-kind", "Gadget", "-validation"},
		{"create", "api", "-api", "toys.example.com/v1/Gizmo"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	files := tree(t, dir)
	assert.Contains(t, files, "apis/gadgets/v1/gizmo_types.go")
	assert.Contains(t, files, "generated/informers/externalversions/gadgets/v1/gizmo.go")
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go test .:\n%s", out)
	assert.NotContains(t, strings.Join([]string{files["main.go"], files["gadget_validation_webhook.go"]}, ""), "apis/toys")
}
