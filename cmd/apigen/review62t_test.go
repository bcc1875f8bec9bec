package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// create webhook on a kind of a group whose package directory is not its
// first label (supported since round 10: groupDir) should work as it does
// for apis/gadgets with toys.example.com: the kind's package is
// apis/myteam/v1 and imports fine. It is refused instead, with an error
// about the -api flag (which create webhook has not) saying the label
// "names the API's Go package directories (apis/my-team/v1 ...)", which
// is not where the package is.
func TestReviewWebhookOnKindOfDashedGroup(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, teamPackage)
	p, err := op.planWebhooks(webhookRequest{kind: "Robot", defaulting: true})
	require.NoError(t, err, "create webhook -kind Robot -defaulting on apis/myteam/v1")
	assert.Contains(t, string(p.files["robot_defaulting_webhook.go"]), `myteamv1 "example.com/op/apis/myteam/v1"`)
}

// The same for create api: a new version (or kind) of that group goes
// into apis/myteam, as groupDirOf says; the scaffold's check of the
// group's first label refuses it first.
func TestReviewCreateAPIVersionOfDashedGroup(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, teamPackage)
	p, err := op.planAPI(t.Context(), "my-team.example.com/v2/Robot")
	require.NoError(t, err, "create api -api my-team.example.com/v2/Robot, the group's packages being in apis/myteam")
	assert.Contains(t, p.files, "apis/myteam/v2/types.go")
}

// The Go name of a group's methods in the generated clientset and
// informer factory is client-gen's and informer-gen's: the group's first
// label capitalized, or the +groupGoName of its package. A new kind of
// a group with +groupGoName=Playthings (packages in apis/gadgets, group
// toys.example.com) gets main.go wiring that calls factory.Toys(), a
// method the factory does not have (it has Playthings()): the build fails
// and create undoes. create should take the group's Go name from
// +groupGoName where the package has it.
func TestReviewCreateAPIKindUsesGroupGoName(t *testing.T) {
	t.Parallel()
	pkg := map[string]string{
		"apis/gadgets/v1/doc.go":   strings.Replace(gadgetsPackage["apis/gadgets/v1/doc.go"], "+groupName=toys.example.com\n", "+groupName=toys.example.com\n// +groupGoName=Playthings\n", 1),
		"apis/gadgets/v1/types.go": gadgetsPackage["apis/gadgets/v1/types.go"],
	}
	op, _ := initOperator(t, pkg)
	p, err := op.planAPI(t.Context(), "toys.example.com/v1/Gizmo")
	require.NoError(t, err)
	mainGo := string(p.edits["main.go"])
	assert.Contains(t, mainGo, "factory.Playthings().V1().Gizmos()", "main.go's wiring of the Gizmo controller:\n%s", mainGo)
	test := string(p.files["gizmo_controller_test.go"])
	assert.Contains(t, test, "client.PlaythingsV1().Gizmos(", "the controller test's client calls:\n%s", test)
}

// client-gen, lister-gen and informer-gen take a group version's Go name
// from the +groupGoName of its own package: a new version of a kind of a
// group that has one (toys.example.com, +groupGoName=Playthings in
// apis/gadgets/v1/doc.go) must have it too, or the generated clientset
// has PlaythingsV1() beside ToysV2() and the informer factory two names
// for one group. create api copies the hub package's +kubebuilder
// markers into the new package's doc.go, but not +groupGoName.
func TestReviewCreateAPIVersionKeepsGroupGoName(t *testing.T) {
	t.Parallel()
	pkg := map[string]string{
		"apis/gadgets/v1/doc.go":   strings.Replace(gadgetsPackage["apis/gadgets/v1/doc.go"], "+groupName=toys.example.com\n", "+groupName=toys.example.com\n// +groupGoName=Playthings\n", 1),
		"apis/gadgets/v1/types.go": gadgetsPackage["apis/gadgets/v1/types.go"],
	}
	op, _ := initOperator(t, pkg)
	p, err := op.planAPI(t.Context(), "toys.example.com/v2/Gadget")
	require.NoError(t, err)
	doc := string(p.files["apis/gadgets/v2/doc.go"])
	assert.Contains(t, doc, "+groupGoName=Playthings", "the new version's doc.go:\n%s", doc)
}

// The same root as TestReviewWebhookOnKindOfDashedGroup: scaffoldOf runs
// the init-time checks of the group's first label before it puts the
// kind in its real directory. A group meta.example.com whose packages are
// in apis/metaapi (import name metaapiv1, no clash) is refused by create
// webhook as if its packages were imported as metav1.
func TestReviewWebhookOnKindOfGroupLabelledMeta(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, map[string]string{
		"apis/metaapi/v1/doc.go":   strings.Replace(teamPackage["apis/myteam/v1/doc.go"], "+groupName=my-team.example.com\n// +groupGoName=MyTeam\n", "+groupName=meta.example.com\n", 1),
		"apis/metaapi/v1/types.go": teamPackage["apis/myteam/v1/types.go"],
	})
	p, err := op.planWebhooks(webhookRequest{kind: "Robot", validation: true})
	require.NoError(t, err, "create webhook -kind Robot -validation on apis/metaapi/v1")
	assert.Contains(t, string(p.files["robot_validation_webhook.go"]), `metaapiv1 "example.com/op/apis/metaapi/v1"`)
}
