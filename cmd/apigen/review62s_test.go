package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Review round 10. apigen generates for API packages whose group
// directory is not the group's first label (generate.go's
// findAPIPackages names the generated group packages after the
// directory; docs/new-api.md: "<dir>/<group>/<version>"), and create
// finds such a kind (scanKinds keeps its package directory, k.dir). But
// create webhook's templates import the kind's package at the directory
// that scaffoldOf derives from the group (apis/<first label>/<version>),
// which does not exist: the webhook and its test import
// example.com/op/apis/toys/v1 for a Gadget of apis/gadgets/v1, so create
// fails at its build ("package ... is not in std" / no required module)
// and undoes. What should happen: the webhook imports the kind's own
// package (k.dir), as the conversion webhook's spokes already do.
func TestReviewWebhookOfKindInDirectoryNotNamedAfterGroup(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, map[string]string{
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
	})
	p, err := op.planWebhooks(webhookRequest{kind: "Gadget", defaulting: true})
	require.NoError(t, err)
	for _, f := range []string{"gadget_defaulting_webhook.go", "gadget_defaulting_webhook_test.go"} {
		src := string(p.files[f])
		assert.Contains(t, src, `"example.com/op/apis/gadgets/v1"`, "%s imports the package of the kind Gadget, apis/gadgets/v1:\n%s", f, src)
	}
}

// Review round 10. A new version "starts as the hub is", with "a copy of
// the types and constants of its package the kind uses" (docs/new-api.md).
// An enum field, as kubebuilder users write them (a string type with
// +kubebuilder:validation:Enum and a constant for each value), gets its
// type copied but not its constants, which only code uses: v2 has Size
// but no SizeSmall and SizeLarge, so the defaulting and conversion code
// the user writes next for v2 finds none of the values (and v2's package
// documents an enum whose values it does not name). What should happen:
// the constants of a copied type (declared with that type) are copied
// with it.
func TestReviewNewVersionCopiesTheConstantsOfAnEnum(t *testing.T) {
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel != "apis/example/v1/types.go" {
			return src
		}
		src = strings.Replace(src, "\tMessage string `json:\"message,omitempty\"`\n",
			"\tMessage string `json:\"message,omitempty\"`\n\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n", 1)
		return src + `
// Size is the size of a Widget.
// +kubebuilder:validation:Enum=Small;Large
type Size string

// The sizes of a Widget.
const (
	SizeSmall Size = "Small"
	SizeLarge Size = "Large"
)
`
	})
	p, err := op.planAPI(t.Context(), "example.com/v2/Widget")
	require.NoError(t, err)
	src := string(p.files["apis/example/v2/types.go"])
	require.Contains(t, src, "type Size string")
	assert.Contains(t, src, "SizeSmall", "v2 has the type Size without its values:\n%s", src)
}
