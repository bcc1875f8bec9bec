package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a new version cannot copy as the hub has it is refused, naming
// what, with nothing planned: a method that uses a function of the hub's
// package, two declarations that use one package name for two packages,
// and, in a package that exists already, a function named like a type the
// new version copies or package markers unlike the hub's.
func TestCreateAPIVersionRefusesWhatItCannotCopy(t *testing.T) {
	t.Parallel()
	withSize := func(text string) string {
		text = strings.Replace(text, "\tMessage string", "\tSize Size `json:\"size,omitempty\"`\n\tMessage string", 1)
		return text + "\n// Size is a type of the user's.\ntype Size struct {\n\tReplicas int32 `json:\"replicas\"`\n}\n"
	}
	for _, tc := range []struct {
		name  string
		edit  func(string) string
		files map[string]string // more files of the hub's package
		v2    map[string]string // the new version's package, where it exists (with Gadget's v2)
		err   string
	}{{
		name: "method uses a function",
		edit: withSize,
		files: map[string]string{"size.go": `package v1

// String names the size.
func (s Size) String() string { return sizeName(s.Replicas) }

func sizeName(n int32) string { return "size" }
`},
		err: "apis/example/v1/size.go's method Size.String uses sizeName, a function of v1's package that a new version does not copy",
	}, {
		name: "one package name for two packages",
		edit: func(text string) string {
			text = strings.Replace(text, "import metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"",
				"import (\n\tlib \"k8s.io/apimachinery/pkg/util/intstr\"\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n)", 1)
			text = strings.Replace(text, "\tMessage string", "\tPort lib.IntOrString `json:\"port\"`\n\tExtra Extra `json:\"extra\"`\n\tMessage string", 1)
			return text
		},
		files: map[string]string{"extra.go": `package v1

import lib "k8s.io/apimachinery/pkg/api/resource"

// Extra is a type of the user's.
type Extra struct {
	Amount lib.Quantity ` + "`json:\"amount\"`" + `
}
`},
		err: "uses lib as the package",
	}, {
		name: "a function of the package is named like a copied type",
		edit: withSize,
		v2:   map[string]string{"size.go": "package v2\n\n// Size is the user's function.\nfunc Size() int { return 1 }\n"},
		err:  "apis/example/v2/size.go declares Size, which the new version of Widget copies from v1 (apis/example/v1/types.go), unlike it",
	}, {
		name:  "package markers unlike the hub's",
		edit:  withSize,
		files: map[string]string{"markers.go": "// +kubebuilder:validation:Optional\npackage v1\n"},
		v2:    map[string]string{},
		err:   "the package apis/example/v2 has the package markers none, v1 of Widget (apis/example/v1) has +kubebuilder:validation:Optional",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := hubOperator(t, tc.edit)
			write := func(rel, text string) {
				p := filepath.Join(op.mod.root, filepath.FromSlash(rel))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
			}
			for name, text := range tc.files {
				write("apis/example/v1/"+name, text)
			}
			if tc.v2 != nil {
				g := &scaffold{Name: "widget-operator"}
				require.NoError(t, g.complete("example.com/v2/Gadget"))
				g.Module = "example.com/op"
				for rel, tmpl := range map[string]string{"doc.go": "doc.go.tmpl", "gadget_types.go": "types.go.tmpl"} {
					src, err := render(tmpl, g)
					require.NoError(t, err)
					write("apis/example/v2/"+rel, string(src))
				}
				for name, text := range tc.v2 {
					write("apis/example/v2/"+name, text)
				}
			}
			op, err := loadOperator(op.mod)
			require.NoError(t, err)
			plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
			require.ErrorContains(t, err, tc.err)
			assert.Nil(t, plan, "nothing planned")
		})
	}
}
