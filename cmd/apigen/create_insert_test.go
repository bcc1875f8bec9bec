package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/new-api.md: "The commands change only what they own: ... the
// lines they add to main.go ... at the marker comments". create api
// (and create webhook) splice their lines, formatted on their own, in
// above the marker: a user's code elsewhere in main.go that is not as
// gofmt writes it (an aligned table, a one-line func, spacing kept on
// purpose) stays as it was.
func TestCreateChangesOnlyItsLinesOfMain(t *testing.T) {
	t.Parallel()
	const own = "\n// userTable is the user's, laid out by hand.\nvar userTable = map[string]int{\"a\":    1, \"bbbbbb\": 2}\n"
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "main.go" {
			return src + own
		}
		return src
	})
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	require.Contains(t, p.edits, "main.go")
	assert.Contains(t, string(p.edits["main.go"]), own, "the user's lines of main.go, outside the marker, as they were")
	assert.Contains(t, string(p.edits["main.go"]), "\tgadgetCtrl, err := newGadgetController(", "create's lines, indented as the marker")
}

// A main.go with CRLF line ends (git's core.autocrlf on Windows) keeps
// them: the lines create api adds end as the marker's line does, and the
// others are as they were.
func TestCreateKeepsCRLFOfMain(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "main.go" {
			return strings.ReplaceAll(src, "\n", "\r\n")
		}
		return src
	})
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	got := string(p.edits["main.go"])
	require.Contains(t, got, "\tcontrollers = append(controllers, gadgetCtrl)\r\n\t// +apigen:scaffold:controllers", "create api's lines, above the marker")
	assert.Equal(t, strings.Count(got, "\n"), strings.Count(got, "\r\n"), "every line of main.go ends in CRLF")
}

// The API package's files with CRLF line ends keep them too: the
// "// +kubebuilder:storageversion" line that create api of a new version
// adds below the hub's +genclient, and the types it adds to a
// self-registering package's AddKnownTypes call one a line, end as the
// line they are added below does.
func TestCreateKeepsCRLFOfAPIPackage(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel != "apis/example/v1/types.go" {
			return src
		}
		return strings.ReplaceAll(src, "\n", "\r\n")
	})
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	edited, ok := p.edits["apis/example/v1/types.go"]
	require.True(t, ok, "create api adds +kubebuilder:storageversion to the hub's types.go")
	text := string(edited)
	require.Contains(t, text, "// +genclient\r\n// +kubebuilder:storageversion\r\n")
	assert.Equal(t, strings.Count(text, "\n"), strings.Count(text, "\r\n"), "every line of the CRLF types.go ends in CRLF:\n%q", text[:strings.Index(text, "type Widget struct")])

	op, _ = initOperator(t, map[string]string{"apis/example/v1/register.go": strings.ReplaceAll(selfRegisteringRegister, "\n", "\r\n")})
	p, err = op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	text = string(p.edits["apis/example/v1/register.go"])
	require.Contains(t, text, "\t\t&WidgetList{},\r\n\t\t&Gadget{},\r\n\t\t&GadgetList{},\r\n\t)")
	assert.Equal(t, strings.Count(text, "\n"), strings.Count(text, "\r\n"), "every line of the CRLF register.go ends in CRLF")
}

// The imports that come with added lines (a new version's spoke in the
// conversion webhook's list) are spliced in too: in their sorted place
// in the group of the import most like them, the rest of the file as it
// was; an import the file has is not added again.
func TestInsertImport(t *testing.T) {
	t.Parallel()
	const src = "package main\n\nimport (\n\t\"context\"\n\n\t\"github.com/ctrlkit/ctrlkit/webhook\"\n\n\texamplev1 \"example.com/op/apis/example/v1\"\n\texamplev3 \"example.com/op/apis/example/v3\"\n)\n\nvar x = map[string]int{\"a\":    1}\n"
	got, err := insertImport(src, "examplev2", "example.com/op/apis/example/v2", "\n")
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(src, "\texamplev3", "\texamplev2 \"example.com/op/apis/example/v2\"\n\texamplev3", 1), got)
	got, err = insertImport(src, "examplev4", "example.com/op/apis/example/v4", "\n")
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(src, "v3\"\n", "v3\"\n\texamplev4 \"example.com/op/apis/example/v4\"\n", 1), got)
	got, err = insertImport(src, "examplev1", "example.com/op/apis/example/v1", "\n")
	require.NoError(t, err)
	assert.Equal(t, src, got, "an import the file has")
	got, err = insertImport("package main\r\n\r\nfunc main() {}\r\n", "", "fmt", "\r\n")
	require.NoError(t, err)
	assert.Equal(t, "package main\r\n\r\nimport \"fmt\"\r\n\r\nfunc main() {}\r\n", got, "a file without imports")
}
