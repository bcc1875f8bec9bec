package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hub's package-level validation markers (in its doc.go, as
// kubebuilder's groupversion_info.go holds them: +kubebuilder:validation:Optional
// makes every field optional unless marked +required) shape the hub's
// schema as much as its types' markers do. The new version's package gets
// init's doc.go without them, so a field the hub takes as optional (Name,
// no omitempty, no +optional) is required in the new version's schema:
// the CRD's versions differ, and a v2 Widget without a name is refused
// where a v1 one is admitted.
func TestCreateAPIVersionKeepsPackageMarkers(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		require.Contains(t, text, "\t// Message is an example field")
		return strings.Replace(text, "\t// Message is an example field", "\t// Name is the user's own field, optional as the package's markers say.\n\tName string `json:\"name\"`\n\n\t// Message is an example field", 1)
	})
	doc := filepath.Join(op.mod.root, "apis/example/v1/doc.go")
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	require.Contains(t, string(b), "// +groupName=example.com\n")
	b = []byte(strings.Replace(string(b), "// +groupName=example.com\n", "// +groupName=example.com\n// +kubebuilder:validation:Optional\n", 1))
	require.NoError(t, os.WriteFile(doc, b, 0o644))
	op, err = loadOperator(op.mod)
	require.NoError(t, err)
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.Regexp(t, "optional as the package's markers say.\n\tName +string `json:\"name\"`", types, "the hub's field, without +optional, in the new version")
	var pkg strings.Builder
	for rel, src := range plan.files {
		if strings.HasPrefix(rel, "apis/example/v2/") {
			pkg.Write(src)
		}
	}
	assert.True(t, strings.Contains(pkg.String(), "+kubebuilder:validation:Optional"),
		"the hub package's +kubebuilder:validation:Optional in the new version's package, whose fields are otherwise required:\n%s", plan.files["apis/example/v2/doc.go"])
}

// The same in a module made by apigen init, as a user runs it: the CRD's
// v2 schema requires spec.name, its v1 schema does not.
func TestCreatedVersionSchemaKeepsPackageMarkers(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	editModuleFile(t, dir, "apis/example/v1/doc.go",
		"// +groupName=example.com\n", "// +groupName=example.com\n// +kubebuilder:validation:Optional\n")
	editModuleFile(t, dir, "apis/example/v1/types.go",
		"\t// Message is an example field", "\t// Name is the user's own field, optional as the package's markers say.\n\tName string `json:\"name\"`\n\n\t// Message is an example field")
	goIn(t, dir, "generate", "./...")
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "create api\nstdout: %s\nstderr: %s", stdout, stderr)
	crd, err := os.ReadFile(filepath.Join(dir, "deploy/crd/example.com_widgets.yaml"))
	require.NoError(t, err)
	text := string(crd)
	v2 := strings.Index(text, "  - name: v2\n")
	require.Greater(t, v2, 0, "the CRD's v2:\n%s", text)
	v1, v1end := strings.Index(text, "  - name: v1\n"), len(text)
	if v1 < v2 {
		v1end = v2
	}
	require.GreaterOrEqual(t, v1, 0)
	v2end := len(text)
	if v1 > v2 {
		v2end = v1
	}
	required := regexp.MustCompile(`required:\n *- name\n`)
	require.NotRegexp(t, required, text[v1:v1end], "v1's schema")
	assert.False(t, required.MatchString(text[v2:v2end]),
		"v2's schema requires spec.name, v1's does not:\n%s", text[v2:v2end])
}
