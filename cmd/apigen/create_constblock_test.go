package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A const block of the hub's package that declares an enum the kind uses
// (Size) beside one it does not (Color) is copied whole, Color along;
// where a method of Color cannot be copied, the refusal says that Color
// comes with the const block of SizeSmall, and that a block of its own
// leaves it out.
func TestCreateAPIVersionRefusalNamesTheConstBlockThatCopiesAType(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		return strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1) +
			"\n// Size is a size.\ntype Size string\n\n// Color is a color.\ntype Color string\n\nfunc (c Color) String() string { return string(c) + suffix }\n\nvar suffix = \"!\"\n\n// The enums.\nconst (\n\tSizeSmall Size = \"Small\"\n\tColorRed Color = \"Red\"\n)\n"
	})
	_, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Color.String", "the refusal")
	require.Contains(t, err.Error(), "Color is copied because it is declared in the const block of SizeSmall, which the copy takes whole: declaring its constants in a block of their own leaves it out")
}
