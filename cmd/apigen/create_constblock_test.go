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

// A type the kind uses itself (Color, a field of Inner, a field of
// WidgetSpec) is not copied because of a const block, though its
// constants share one with SizeSmall: a refusal of its method does not
// say it is.
func TestCreateAPIVersionRefusalDoesNotBlameTheBlockForATypeTheKindUses(t *testing.T) {
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

// A type that a type of a const block's constants uses (Shade, under
// Color, whose ColorRed shares a block with SizeSmall) is declared in no
// const block: a refusal of its method does not say it is.
func TestCreateAPIVersionRefusalDoesNotSayAChainedTypeIsInTheBlock(t *testing.T) {
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
