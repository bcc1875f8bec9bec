package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A type the kind uses itself (Color, a field of Inner, a field of
// WidgetSpec) is not copied because of a const block: declaring the
// block's constants apart would not leave it out. Where a method of
// Color cannot be copied, the refusal should not say that Color comes
// with the const block of SizeSmall (advice that does not help: Color
// is copied anyway). It does, when the block is reached in the
// breadth-first walk before Color is: viaConstBlock records only the
// block's uses and not the kind's own, so the block's later use wins.
func TestReviewConstBlockRefusalMislabelsATypeTheKindUses(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		return strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tInner Inner `json:\"inner,omitempty\"`\n\tMessage string", 1) +
			"\n// Inner holds a color.\ntype Inner struct {\n\tColor Color `json:\"color,omitempty\"`\n}\n" +
			"\n// Size is a size.\ntype Size string\n\n// Color is a color.\ntype Color string\n\nfunc (c Color) String() string { return string(c) + suffix }\n\nvar suffix = \"!\"\n\n// The enums.\nconst (\n\tSizeSmall Size = \"Small\"\n\tColorRed Color = \"Red\"\n)\n"
	})
	_, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Color.String", "the refusal")
	require.NotContains(t, err.Error(), "Color is copied because it is declared in the const block of SizeSmall",
		"Color is a field of Inner, which the kind uses: the block is not why it is copied")
}

// A type copied only because a type of a const block's constants uses it
// (Shade, the underlying type of Color, whose constant ColorRed shares a
// block with SizeSmall) is not "declared in the const block": the
// refusal of a method of Shade should name the chain (Color, declared
// there, uses Shade) or at least not say that Shade is declared in the
// block and that declaring "its constants" apart leaves it out (Shade
// has no constants).
func TestReviewConstBlockRefusalSaysAChainedTypeIsDeclaredInTheBlock(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		return strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1) +
			"\n// Size is a size.\ntype Size string\n\n// Color is a color.\ntype Color Shade\n\n// Shade is a shade.\ntype Shade string\n\nfunc (s Shade) String() string { return string(s) + suffix }\n\nvar suffix = \"!\"\n\n// The enums.\nconst (\n\tSizeSmall Size = \"Small\"\n\tColorRed Color = \"Red\"\n)\n"
	})
	_, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Shade.String", "the refusal")
	require.NotContains(t, err.Error(), "Shade is copied because it is declared in the const block of SizeSmall",
		"Shade is declared in no const block")
}
