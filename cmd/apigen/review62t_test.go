package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
