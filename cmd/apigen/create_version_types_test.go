package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The new version copies the hub's Spec and Status and the types of its
// package they use, wherever they are declared: a type declared in a
// grouped declaration (type ( Tier string; Zone string ), as Go code
// often declares a few small types) is one the new version's fields use
// too, or the new version does not build.
func TestCreateAPIVersionCopiesGroupedTypes(t *testing.T) {
	t.Parallel()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		if rel == "apis/example/v1/types.go" {
			text := strings.Replace(string(src), "\tMessage string", "\tTier Tier `json:\"tier,omitempty\"`\n\tZone Zone `json:\"zone,omitempty\"`\n\tMessage string", 1)
			src = []byte(text + "\n// The user's small types.\ntype (\n\t// Tier is a service tier.\n\tTier string\n\t// Zone is a zone.\n\tZone string\n)\n")
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, src, 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.NotEmpty(t, types, "the new version's types")
	assert.Regexp(t, "\tTier +Tier +`json:\"tier,omitempty\"`", types, "the hub's field")
	assert.Regexp(t, `\bTier +string\b`, types, "the type Tier the new version's field uses is declared in the new version:\n%s", types)
	assert.Regexp(t, `\bZone +string\b`, types, "the type Zone the new version's field uses is declared in the new version:\n%s", types)
}

// The new version starts as the hub is, beyond its fields: the hub's
// printer columns (+kubebuilder:printcolumn on its kind's type, per
// version in the CRD) are the new version's too. Without them `kubectl
// get widgets`, which reads the preferred version (v2 once it exists),
// loses the columns the user gave the kind.
func TestCreateAPIVersionKeepsPrintColumns(t *testing.T) {
	t.Parallel()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	const column = `// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=".spec.message"`
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		if rel == "apis/example/v1/types.go" {
			text := string(src)
			require.Contains(t, text, "// +kubebuilder:subresource:status\n")
			src = []byte(strings.Replace(text, "// +kubebuilder:subresource:status\n", "// +kubebuilder:subresource:status\n"+column+"\n", 1))
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, src, 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.NotEmpty(t, types, "the new version's types")
	assert.Contains(t, types, column, "the hub's printer column in the new version:\n%s", types)
}

// hubOperator writes an operator as init makes it, with its v1 types.go
// changed by edit, and loads it.
func hubOperator(t *testing.T, edit func(string) string) *operatorDir {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		if rel == "apis/example/v1/types.go" {
			src = []byte(edit(string(src)))
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, src, 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	return op
}

// The copy of the hub's WidgetSpec in the new version keeps its
// type-level validation: markers in a group of their own above the type's
// doc comment (the layout init's types use for the kind's markers, and
// one controller-gen reads) are the type's markers too. Without them the
// new version's schema admits objects the hub's refuses: a user who
// writes v2 gets past the rule.
func TestCreateAPIVersionKeepsSpecValidation(t *testing.T) {
	t.Parallel()
	const rule = `// +kubebuilder:validation:XValidation:rule="self.message != 'forbidden'",message="message must not be forbidden"`
	op := hubOperator(t, func(text string) string {
		require.Contains(t, text, "// WidgetSpec is the desired state")
		return strings.Replace(text, "// WidgetSpec is the desired state", rule+"\n\n// WidgetSpec is the desired state", 1)
	})
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.Contains(t, types, "type WidgetSpec struct", "the new version's types")
	assert.Contains(t, types, rule, "the hub's WidgetSpec validation in the new version:\n%s", types)
}

// Two kinds of a package whose Specs share a type of the package (a
// Size, a Selector) each get a second version in the same new package,
// one create api each: the first copies the shared type there, and the
// second must use that copy (or be given the type once), not refuse
// because the new package declares it.
func TestCreateAPIVersionsShareTypes(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		text = strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
		return text + "\n// Size is a type of the user's, of both kinds.\ntype Size struct {\n\tReplicas int32 `json:\"replicas\"`\n}\n"
	})
	// The second kind, as create api writes it, with the shared type.
	g := &scaffold{Name: "widget-operator"}
	require.NoError(t, g.complete("example.com/v1/Gadget"))
	g.Module = "example.com/op"
	src, err := render("types.go.tmpl", g)
	require.NoError(t, err)
	gadget := strings.Replace(string(src), "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
	require.NoError(t, os.WriteFile(filepath.Join(op.mod.root, "apis/example/v1/gadget_types.go"), []byte(gadget), 0o644))

	write := func(plan *createPlan) {
		t.Helper()
		for rel, b := range plan.files {
			p := filepath.Join(op.mod.root, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
		for rel, b := range plan.edits {
			require.NoError(t, os.WriteFile(filepath.Join(op.mod.root, filepath.FromSlash(rel)), b, 0o644))
		}
	}
	for _, api := range []string{"example.com/v2/Widget", "example.com/v2/Gadget"} {
		op, err := loadOperator(op.mod)
		require.NoError(t, err)
		plan, err := op.planAPI(t.Context(), apiRequest{api: api})
		require.NoError(t, err, "create api -api %s", api)
		write(plan)
	}
}

// A kind without a status (a kind of settings, which kubebuilder and
// controller-gen allow: no Status field, no status subresource) gets a
// second version like any kind: the new version is the hub's shape, with
// no WidgetStatus to copy, not a refusal.
func TestCreateAPIVersionOfKindWithoutStatus(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		for _, cut := range []string{"// +kubebuilder:subresource:status\n", "\t// +optional\n\tStatus WidgetStatus `json:\"status,omitempty\"`\n"} {
			require.Contains(t, text, cut)
			text = strings.Replace(text, cut, "", 1)
		}
		start := strings.Index(text, "// WidgetStatus is")
		end := strings.Index(text, "// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object\n\n// WidgetList")
		require.True(t, start > 0 && end > start)
		return text[:start] + text[end:]
	})
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err, "create api -api example.com/v2/Widget of a kind without a status")
	types := string(plan.files["apis/example/v2/types.go"])
	assert.Contains(t, types, "type WidgetSpec struct", types)
}

// The new version builds whatever of its package the hub's types use: an
// import whose package name is not the last element of its path (a major
// version suffix, gopkg.in's .vN) comes along, and so do the constants a
// copied type needs (an array's length) with the constants they use.
func TestCreateAPIVersionCopiesImportsAndConstants(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		text = strings.Replace(text, "import metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"",
			"import (\n\t\"example.com/lib/v2\"\n\t\"gopkg.in/yaml.v3\"\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n)", 1)
		text = strings.Replace(text, "\tMessage string", "\tRef lib.Ref `json:\"ref\"`\n\tDoc *yaml.Node `json:\"-\"`\n\tSlots [MaxSlots]int32 `json:\"slots\"`\n\tMessage string", 1)
		return text + "\n// MaxSlots is the most slots.\nconst MaxSlots = slotsPerZone * 2\n\nconst slotsPerZone = 4\n"
	})
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.Contains(t, types, "type WidgetSpec struct", "the new version's types")
	assert.Contains(t, types, "\"example.com/lib/v2\"", "the import of package lib:\n%s", types)
	assert.Contains(t, types, "\"gopkg.in/yaml.v3\"", "the import of package yaml:\n%s", types)
	assert.Contains(t, types, "const MaxSlots = slotsPerZone * 2", "the constant the array's length is:\n%s", types)
	assert.Contains(t, types, "const slotsPerZone = 4", "the constant that constant uses:\n%s", types)
}

// A type of the new version's package that another kind's version copied
// and the user changed since is not the hub's any more: the second kind's
// new version is refused, naming both, rather than using the changed one
// or declaring it twice.
func TestCreateAPIVersionRefusesChangedSharedType(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		text = strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
		return text + "\n// Size is a type of the user's, of both kinds.\ntype Size struct {\n\tReplicas int32 `json:\"replicas\"`\n}\n"
	})
	g := &scaffold{Name: "widget-operator"}
	require.NoError(t, g.complete("example.com/v1/Gadget"))
	g.Module = "example.com/op"
	src, err := render("types.go.tmpl", g)
	require.NoError(t, err)
	gadget := strings.Replace(string(src), "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
	require.NoError(t, os.WriteFile(filepath.Join(op.mod.root, "apis/example/v1/gadget_types.go"), []byte(gadget), 0o644))
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	v2 := string(plan.files["apis/example/v2/types.go"])
	require.Contains(t, v2, "\tReplicas int32 `json:\"replicas\"`")
	v2 = strings.Replace(v2, "\tReplicas int32 `json:\"replicas\"`", "\tReplicas int64 `json:\"replicas\"`", 1)
	for rel, b := range map[string][]byte{"apis/example/v2/doc.go": plan.files["apis/example/v2/doc.go"], "apis/example/v2/types.go": []byte(v2)} {
		p := filepath.Join(op.mod.root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	op, err = loadOperator(op.mod)
	require.NoError(t, err)
	_, err = op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Gadget"})
	require.ErrorContains(t, err, "apis/example/v2/types.go declares Size, which the new version of Gadget copies from v1 (apis/example/v1/types.go), unlike it")
}

// A new version "starts as the hub is", with "a copy of the types and
// constants of its package the kind uses" (docs/new-api.md): a type it
// copies takes along the constants declared with it, so an enum field,
// as kubebuilder users write them (a string type with
// +kubebuilder:validation:Enum and a constant for each value), has its
// values in the new version too (SizeSmall, SizeLarge), for the
// defaulting and conversion code written for it.
func TestCreateAPIVersionCopiesTheConstantsOfAnEnum(t *testing.T) {
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
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	src := string(p.files["apis/example/v2/types.go"])
	require.Contains(t, src, "type Size string")
	for _, want := range []string{`SizeSmall Size = "Small"`, `SizeLarge Size = "Large"`} {
		assert.Contains(t, src, want, "v2 has the type Size with its values:\n%s", src)
	}
}

// A new version copies the constants declared with a type as the user
// wrote them, right after the type: a grouped const block whole, with its
// doc comment, its constants' comments, iota and the values it leaves
// out, and its layout (not one `const X T = "x"` line per constant, after
// whatever the kind copies last); a block that holds other constants
// beside the type's whole too; single const lines as they were. So with
// and without -hub.
func TestCreateAPIVersionKeepsConstBlocksAsWritten(t *testing.T) {
	t.Parallel()
	const sizeType = "// Size is the size of a Widget.\n// +kubebuilder:validation:Enum=Small;Large\ntype Size string"
	const levelType = "// Level is how loud a Widget is.\ntype Level int"
	for _, tc := range []struct {
		name     string
		field    string // the WidgetSpec field that uses the type
		typ      string // the type's declaration
		consts   string // the constants declared with it, as the user wrote them
		want     string // the constants in the new version after the type, where not consts as written
		declared []string
	}{
		{
			name:  "a grouped block with a doc comment",
			field: "\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n",
			typ:   sizeType,
			consts: "// The sizes a Widget may have.\nconst (\n\t// SizeSmall is one replica.\n\tSizeSmall Size = \"Small\"\n" +
				"\tSizeLarge Size = \"Large\" // three replicas\n)",
			declared: []string{"SizeSmall", "SizeLarge"},
		},
		{
			name:     "an iota block",
			field:    "\t// +optional\n\tLevel Level `json:\"level,omitempty\"`\n",
			typ:      levelType,
			consts:   "// The levels of a Widget.\nconst (\n\tLevelQuiet Level = iota + 1\n\tLevelNormal\n\n\t// LevelLoud is the loudest.\n\tLevelLoud\n)",
			declared: []string{"LevelQuiet", "LevelNormal", "LevelLoud"},
		},
		{
			name:  "a block of the type's constants and others",
			field: "\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n",
			typ:   sizeType,
			consts: "// Sizes, and the names of things.\nconst (\n\tSizeSmall Size = \"Small\"\n\tSizeLarge Size = \"Large\"\n\n" +
				"\t// maxNameLength is the longest name.\n\tmaxNameLength = 63\n\tdefaultZone   = \"a\"\n)",
			declared: []string{"SizeSmall", "SizeLarge", "maxNameLength", "defaultZone"},
		},
		{
			name:     "two types' blocks",
			field:    "\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n\t// +optional\n\tLevel Level `json:\"level,omitempty\"`\n",
			typ:      sizeType + "\n\n// The sizes a Widget may have.\nconst (\n\tSizeSmall Size = \"Small\"\n\tSizeLarge Size = \"Large\"\n)\n\n" + levelType,
			consts:   "// The levels of a Widget.\nconst (\n\tLevelQuiet Level = iota\n\tLevelLoud\n)",
			declared: []string{"SizeSmall", "SizeLarge", "LevelQuiet", "LevelLoud"},
		},
		{
			name:     "a block that declares a name register-gen declares",
			field:    "\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n",
			typ:      sizeType,
			consts:   "const (\n\tGroupName = \"example.com\"\n\n\t// SizeSmall is one replica.\n\tSizeSmall Size = \"Small\"\n)",
			want:     "// SizeSmall is one replica.\nconst SizeSmall Size = \"Small\"",
			declared: []string{"SizeSmall"},
		},
		{
			name:     "single const lines",
			field:    "\t// +optional\n\tSize Size `json:\"size,omitempty\"`\n",
			typ:      sizeType,
			consts:   "// SizeSmall is one replica.\nconst SizeSmall Size = \"Small\"\n\nconst SizeLarge Size = \"Large\"",
			declared: []string{"SizeSmall", "SizeLarge"},
		},
	} {
		for _, hub := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, hub %t", tc.name, hub), func(t *testing.T) {
				t.Parallel()
				op, _ := plannedOperator(t, func(rel, src string) string {
					if rel != "apis/example/v1/types.go" {
						return src
					}
					src = strings.Replace(src, "\tMessage string `json:\"message,omitempty\"`\n", "\tMessage string `json:\"message,omitempty\"`\n"+tc.field, 1)
					return strings.Replace(src, "// WidgetSpec is", tc.typ+"\n\n"+tc.consts+"\n\n// WidgetSpec is", 1)
				})
				p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget", hub: hub})
				require.NoError(t, err)
				src := string(p.files["apis/example/v2/types.go"])
				want := tc.consts
				if tc.want != "" {
					want = tc.want
					assert.NotContains(t, src, "GroupName", "register-gen declares GroupName")
				}
				assert.Contains(t, src, tc.typ+"\n\n"+want+"\n", "v2 has the constants as v1 declares them, right after their type:\n%s", src)
				for _, n := range tc.declared {
					assert.Len(t, regexp.MustCompile(`(?m)^(const |\t)`+n+`\b`).FindAllString(src, -1), 1, "%s is declared once:\n%s", n, src)
				}
			})
		}
	}
}
