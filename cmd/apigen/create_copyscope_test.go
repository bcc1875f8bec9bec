package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withSizeField gives the hub's Widget a field of the user's type Size.
func withSizeField(text string) string {
	text = strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
	return text + "\n// Size is a type of the user's.\ntype Size struct {\n\tReplicas int32 `json:\"replicas\"`\n}\n"
}

// planVersion plans example.com/v2/Widget for the hub that edit makes
// of init's types, with more files of the hub's package and, where v2 is
// not nil, the package v2 made already (with Gadget's v2 in it).
func planVersion(t *testing.T, edit func(string) string, files, v2 map[string]string) (*createPlan, error) {
	t.Helper()
	op := hubOperator(t, edit)
	write := func(rel, text string) {
		p := filepath.Join(op.mod.root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	for name, text := range files {
		write("apis/example/v1/"+name, text)
	}
	if v2 != nil {
		g := &scaffold{Name: "widget-operator"}
		require.NoError(t, g.complete("example.com/v2/Gadget"))
		g.Module = "example.com/op"
		for rel, tmpl := range map[string]string{"doc.go": "doc.go.tmpl", "gadget_types.go": "types.go.tmpl"} {
			src, err := render(tmpl, g)
			require.NoError(t, err)
			write("apis/example/v2/"+rel, string(src))
		}
		for name, text := range v2 {
			write("apis/example/v2/"+name, text)
		}
	}
	op, err := loadOperator(op.mod)
	require.NoError(t, err)
	return op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
}

// gadget is a second kind of the hub's package, as create api writes it.
func gadget(t *testing.T) string {
	t.Helper()
	g := &scaffold{Name: "widget-operator"}
	require.NoError(t, g.complete("example.com/v1/Gadget"))
	g.Module = "example.com/op"
	src, err := render("types.go.tmpl", g)
	require.NoError(t, err)
	return string(src)
}

// What a new version of a kind copies from the hub's package is that
// kind's: another kind (its type or its list's), which has versions of its
// own, is refused by the name of what uses it, as is a declaration that a
// build constraint may declare twice, and a type of the new package that
// is the hub's but for its methods; nothing is planned.
func TestCreateAPIVersionCopiesOnlyItsKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(string) string
		files map[string]string
		v2    map[string]string
		err   string
	}{{
		name: "a method uses another kind",
		edit: func(s string) string { return s },
		files: map[string]string{"widget_gadget.go": `package v1

// Gadget returns the Gadget that w owns.
func (w *Widget) Gadget() *Gadget { return &Gadget{} }
`},
		err: "apis/example/v1/widget_gadget.go's method Widget.Gadget uses Gadget, another kind of v1's package (apis/example/v1/gadget_types.go), which a new version of Widget does not copy",
	}, {
		name: "a method uses another kind's list",
		edit: func(s string) string { return s },
		files: map[string]string{"widget_gadget.go": `package v1

// Gadgets returns the Gadgets that w owns.
func (w *Widget) Gadgets() GadgetList { return GadgetList{} }
`},
		err: "apis/example/v1/widget_gadget.go's method Widget.Gadgets uses GadgetList, another kind of v1's package",
	}, {
		name: "a type uses another kind",
		edit: func(s string) string {
			return strings.Replace(s, "\tMessage string", "\tTemplate Template `json:\"template\"`\n\tMessage string", 1) +
				"\n// Template is what a Widget makes.\ntype Template struct {\n\tGadget Gadget `json:\"gadget\"`\n}\n"
		},
		err: "apis/example/v1/types.go's Template uses Gadget, another kind of v1's package",
	}, {
		name: "a method in a file with build constraints",
		edit: withSizeField,
		files: map[string]string{
			"size_linux.go": "package v1\n\n// Platform names the platform.\nfunc (s Size) Platform() string { return \"linux\" }\n",
			"size_other.go": "//go:build !linux\n\npackage v1\n\n// Platform names the platform.\nfunc (s Size) Platform() string { return \"other\" }\n",
		},
		err: "declares the method Size.Platform, which the new version of Widget copies, in a file with build constraints",
	}, {
		name: "a type in a file with build constraints",
		edit: func(s string) string {
			return strings.Replace(s, "\tMessage string", "\tLevel Level `json:\"level\"`\n\tMessage string", 1)
		},
		files: map[string]string{
			"level_linux.go": "package v1\n\n// Level is a level.\ntype Level int32\n",
			"level_other.go": "//go:build !linux\n\npackage v1\n\n// Level is a level.\ntype Level int64\n",
		},
		err: "declares Level, which the new version of Widget copies, in a file with build constraints",
	}, {
		name: "the new package's type has other methods",
		edit: withSizeField,
		files: map[string]string{"size_string.go": `package v1

// String names the size.
func (s Size) String() string { return "size" }
`},
		v2:  map[string]string{"size.go": "package v2\n\n// Size is a type of the user's.\ntype Size struct {\n\tReplicas int32 `json:\"replicas\"`\n}\n\n// String names the size.\nfunc (s Size) String() string { return \"SIZE\" }\n"},
		err: "apis/example/v2/size.go declares Size as v1 (apis/example/v1/types.go) does, with methods unlike its methods",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"gadget_types.go": gadget(t)}
			for n, text := range tc.files {
				files[n] = text
			}
			plan, err := planVersion(t, tc.edit, files, tc.v2)
			require.ErrorContains(t, err, tc.err)
			assert.Nil(t, plan, "nothing planned")
		})
	}
}

// A method's names are those it uses: the field names of its struct
// literals and struct types are not, so a function of the hub's package
// named like one is no refusal; the keys of a map literal are.
func TestCreateAPIVersionMethodFieldNames(t *testing.T) {
	t.Parallel()
	plan, err := planVersion(t, withSizeField, map[string]string{"size_methods.go": `package v1

// Replicas is the user's function, named like Size's field.
func Replicas() int32 { return 3 }

// Key is the user's function, named like a field of Labelled's struct.
func Key() string { return "k" }

const replicasKey = "replicas"

// Defaults returns sizes of one replica.
func (s Size) Defaults() []Size { return []Size{{Replicas: 1}, {Replicas: 1}} }

// Labelled returns s with a key.
func (s Size) Labelled() any {
	return struct {
		Key      string
		Replicas int32
	}{Key: "size", Replicas: s.Replicas}
}

// Map returns s as a map.
func (s Size) Map() map[string]int32 { return map[string]int32{replicasKey: s.Replicas} }
`}, nil)
	require.NoError(t, err)
	v2 := string(plan.files["apis/example/v2/types.go"])
	for _, want := range []string{"func (s Size) Defaults() []Size", "func (s Size) Labelled() any", "const replicasKey = \"replicas\""} {
		assert.Contains(t, v2, want)
	}
	assert.NotContains(t, v2, "func Replicas()", "functions are not copied")
}

// A hub that registers its types itself declares register-gen's names
// (GroupName, ...) itself: a new version, whose generated register
// declares them, does not copy them where a method uses them.
func TestCreateAPIVersionLeavesRegisterNames(t *testing.T) {
	t.Parallel()
	plan, err := planVersion(t, func(s string) string { return s }, map[string]string{
		"register.go": `package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group of the package.
const GroupName = "example.com"

// SchemeGroupVersion is the group and version of the package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

var (
	// SchemeBuilder registers the package's types.
	SchemeBuilder      = runtime.NewSchemeBuilder(addKnownTypes)
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the package's types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error { s.AddKnownTypes(SchemeGroupVersion, &Widget{}, &WidgetList{}); return nil }
`,
		"widget_resource.go": `package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupResource is the group and resource of widgets.
func (w *Widget) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: GroupName, Resource: "widgets"}
}

// Version is the group and version of w.
func (w *Widget) Version() schema.GroupVersion { return SchemeGroupVersion }
`}, nil)
	require.NoError(t, err)
	v2 := string(plan.files["apis/example/v2/types.go"])
	assert.Contains(t, v2, "func (w *Widget) GroupResource() schema.GroupResource")
	assert.NotContains(t, v2, "GroupName =", "register-gen declares GroupName")
}
