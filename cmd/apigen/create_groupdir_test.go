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

// teamPackage is an API package of the group my-team.example.com, whose
// first label has a dash, in the directory apis/myteam/v1: apigen
// generates for it (naming the generated group packages after the
// directory), with +groupGoName=MyTeam for client-gen's, lister-gen's and
// informer-gen's Go names of the group (MyTeamV1(), MyTeam()), as
// code-generator requires of such a group.
var teamPackage = map[string]string{
	"apis/myteam/v1/doc.go":   "// Package v1 is the my-team.example.com API.\n//\n// +k8s:deepcopy-gen=package\n// +k8s:openapi-gen=true\n// +groupName=my-team.example.com\n// +groupGoName=MyTeam\npackage v1\n",
	"apis/myteam/v1/types.go": strings.ReplaceAll(gadgetsPackage["apis/gadgets/v1/types.go"], "Gadget", "Robot"),
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

	p, err := op.planAPI(t.Context(), apiRequest{api: "toys.example.com/v2/Gadget"})
	require.NoError(t, err)
	assert.Contains(t, p.files, "apis/gadgets/v2/types.go")
	assert.Contains(t, string(p.files["apis/gadgets/v2/gadget_conversion.go"]), `gadgetsv1 "example.com/op/apis/gadgets/v1"`)
	for f := range p.files {
		assert.NotContains(t, f, "apis/toys", "a new file outside the group's directory")
	}

	p, err = op.planAPI(t.Context(), apiRequest{api: "toys.example.com/v1/Gizmo"})
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

	_, err = op.planAPI(t.Context(), apiRequest{api: "toys.example.org/v1/Robot"})
	assert.ErrorContains(t, err, "the group toys.example.org's methods of the generated clientset and informer factory would be Toys(), as toys.example.com's are")
	_, err = op.planAPI(t.Context(), apiRequest{api: "gadgets.example.com/v1/Robot"})
	assert.ErrorContains(t, err, "the group gadgets.example.com has its packages in apis/gadgets, which toys.example.com's are in")
}

// In a module, an operator with a group whose packages are in a directory
// other than its first label gets a webhook of its kind and a new kind of
// the group: both build, and the operator's tests pass.
func TestCreateInGroupDirectoryBuilds(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
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

// A group the operator has already is checked where its packages are, not
// at its first label, which names no package then: create webhook on a
// kind of my-team.example.com in apis/myteam/v1 imports the kind's
// package as myteamv1, though the label "my-team" could name no Go
// package directory.
func TestCreateWebhookOnKindOfDashedGroup(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, teamPackage)
	p, err := op.planWebhooks(webhookRequest{kind: "Robot", defaulting: true})
	require.NoError(t, err, "create webhook -kind Robot -defaulting on apis/myteam/v1")
	assert.Contains(t, string(p.files["robot_defaulting_webhook.go"]), `myteamv1 "example.com/op/apis/myteam/v1"`)
}

// The same for create api: a new version (or kind) of that group goes
// into apis/myteam, where its packages are.
func TestCreateAPIVersionOfDashedGroup(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, teamPackage)
	p, err := op.planAPI(t.Context(), apiRequest{api: "my-team.example.com/v2/Robot"})
	require.NoError(t, err, "create api -api my-team.example.com/v2/Robot, the group's packages being in apis/myteam")
	assert.Contains(t, p.files, "apis/myteam/v2/types.go")
}

// The import name that create checks against the other packages the
// generated code and the scaffold import is that of the group's
// directory: a group meta.example.com whose packages are in apis/metaapi
// (imported as metaapiv1) gets a webhook, though init refuses a new group
// labelled meta (whose packages it would import as metav1, apimachinery's
// name).
func TestCreateWebhookOnKindOfGroupLabelledMeta(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, map[string]string{
		"apis/metaapi/v1/doc.go":   strings.Replace(teamPackage["apis/myteam/v1/doc.go"], "+groupName=my-team.example.com\n// +groupGoName=MyTeam\n", "+groupName=meta.example.com\n", 1),
		"apis/metaapi/v1/types.go": teamPackage["apis/myteam/v1/types.go"],
	})
	p, err := op.planWebhooks(webhookRequest{kind: "Robot", validation: true})
	require.NoError(t, err, "create webhook -kind Robot -validation on apis/metaapi/v1")
	assert.Contains(t, string(p.files["robot_validation_webhook.go"]), `metaapiv1 "example.com/op/apis/metaapi/v1"`)
}

// A group the operator has already whose directory makes packages the
// operator cannot import is refused by its directory's name.
func TestCreateAPIRefusesGroupDirectoryItCannotImport(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, map[string]string{
		"apis/internal/v1/doc.go":   strings.Replace(teamPackage["apis/myteam/v1/doc.go"], "+groupName=my-team.example.com\n", "+groupName=team.example.com\n", 1),
		"apis/internal/v1/types.go": teamPackage["apis/myteam/v1/types.go"],
	})
	_, err := op.planAPI(t.Context(), apiRequest{api: "team.example.com/v2/Robot"})
	assert.ErrorContains(t, err, "the directory apis/internal of the group team.example.com's packages names the API's Go package directories (apis/internal/v2")
}
