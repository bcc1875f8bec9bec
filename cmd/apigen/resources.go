package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gobuffalo/flect"
	clientargs "k8s.io/code-generator/cmd/client-gen/args"
	"k8s.io/code-generator/pkg/util"
	"k8s.io/gengo/v2/namer"
	"k8s.io/gengo/v2/types"
	"sigs.k8s.io/yaml"
)

// clientType is a type of an API package that client-gen makes a typed
// client for, with the resource that client requests.
type clientType struct {
	pkg      string // the API package's directory, relative to the module root
	group    string // its +groupName
	kind     string // the type's name
	resource string // the resource of the client's requests
}

// clientTypes lists the +genclient types of the API packages, each with
// the resource its generated client requests: the type's "+resourceName="
// tag, or else client-gen's plural of the type's name (which also names
// the resource of the generated informers' generic lookup).
func clientTypes(root string, pkgs []apiPackage) ([]clientType, error) {
	plurals := namer.NewAllLowercasePluralNamer(util.PluralExceptionListToMapOrDie(clientargs.New().PluralExceptions))
	var out []clientType
	for _, p := range pkgs {
		dir := filepath.Join(root, filepath.FromSlash(p.dir))
		tags, err := packageTags(dir)
		if err != nil {
			return nil, err
		}
		group := tags["groupName"]
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE || len(g.Specs) != 1 {
					continue
				}
				spec := g.Specs[0].(*ast.TypeSpec)
				lines := typeComment(f, g)
				if !genclient(lines) {
					continue
				}
				resource := tagValue(lines, "resourceName")
				if resource == "" {
					resource = plurals.Name(&types.Type{Name: types.Name{Name: spec.Name.Name}})
				}
				out = append(out, clientType{pkg: p.dir, group: group, kind: spec.Name.Name, resource: resource})
			}
		}
	}
	return out, nil
}

// typeComment returns the lines of the comments that gengo gives a type
// declaration: the comment groups from the end of the previous
// declaration to the declaration (its doc comment, and those above it).
func typeComment(f *ast.File, g *ast.GenDecl) []string {
	start := f.Package
	for _, d := range f.Decls {
		if d.End() <= g.Pos() && d.End() > start {
			start = d.End()
		}
	}
	var lines []string
	for _, c := range f.Comments {
		if c.Pos() > start && c.End() <= g.Pos() {
			lines = append(lines, strings.Split(c.Text(), "\n")...)
		}
	}
	return lines
}

// genclient tells whether the comment lines ask client-gen for a client.
func genclient(lines []string) bool {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "+genclient" || l == "+genclient=true" {
			return true
		}
	}
	return false
}

// tagValue returns the value of the last "+name=value" line of lines.
func tagValue(lines []string, name string) string {
	value := ""
	for _, l := range lines {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "+"+name+"="); ok {
			value = strings.TrimSpace(v)
		}
	}
	return value
}

// crdPlural is controller-gen's plural of a kind for a CRD without a
// +kubebuilder:resource:path marker.
func crdPlural(kind string) string { return strings.ToLower(flect.Pluralize(kind)) }

// servedResources reads the group, kind and plural of every CRD in dir
// (the staged manifests of the CRD step), by "<group>/<kind>".
func servedResources(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(data, []byte("\nkind: CustomResourceDefinition\n")) {
			continue
		}
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind   string `json:"kind"`
					Plural string `json:"plural"`
				} `json:"names"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("reading the generated %s: %w", e.Name(), err)
		}
		out[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = crd.Spec.Names.Plural
	}
	return out, nil
}

// checkResources compares, for every type of the API packages that has
// a generated client and a CRD, the resource the CRD serves (in the
// staged CRD directory crdDir) with the resource the client requests:
// where they differ, every request of the client gets a 404 from a real
// API server (the generated fakes do not tell). It returns an error that
// names each such type and the markers that make the two agree.
func checkResources(root string, pkgs []apiPackage, crdDir string) error {
	clients, err := clientTypes(root, pkgs)
	if err != nil {
		return err
	}
	served, err := servedResources(crdDir)
	if err != nil {
		return err
	}
	var wrong []string
	for _, c := range clients {
		plural, ok := served[c.group+"/"+c.kind]
		if !ok || plural == c.resource {
			continue
		}
		wrong = append(wrong, fmt.Sprintf("type %s of %s: the CRD serves %q, the generated client requests %q; give the type's comment"+
			" both \"+kubebuilder:resource:path=<plural>\" (the CRD's) and \"+resourceName=<plural>\" (the client's, beside +genclient), with the same plural, such as %q",
			c.kind, c.pkg, plural, c.resource, plural))
	}
	if len(wrong) == 0 {
		return nil
	}
	slices.Sort(wrong)
	return fmt.Errorf("the CRDs and the generated clients name different resources (a real API server would answer every request of those clients with 404 Not Found):\n  %s",
		strings.Join(wrong, "\n  "))
}
