package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A const block of the hub's package that mixes an enum the kind uses
// (Size) with one it does not (Color) is copied whole, Color along; a
// method of Color that create cannot copy (it uses a variable of the
// package) then refuses the new version, naming Color.String only. The
// user, whose Widget does not use Color, is not told why Color is
// copied at all. What should happen: the refusal says that Color comes
// with the const block that declares SizeSmall (the Size the kind uses),
// and that declaring Color's constants in a block of their own keeps it
// out of the copy (as docs/new-api.md says).
func TestReviewMixedConstBlockRefusalNamesTheBlock(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		return strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1) +
			"\n// Size is a size.\ntype Size string\n\n// Color is a color.\ntype Color string\n\nfunc (c Color) String() string { return string(c) + suffix }\n\nvar suffix = \"!\"\n\n// The enums.\nconst (\n\tSizeSmall Size = \"Small\"\n\tColorRed Color = \"Red\"\n)\n"
	})
	_, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Color.String", "the refusal")
	require.Contains(t, err.Error(), "SizeSmall", "the refusal of Color.String, which the kind does not use, says it comes with the const block of SizeSmall: %v", err)
}
