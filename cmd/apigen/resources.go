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
	"k8s.io/gengo/v2"
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
// the resource its generated client requests: the first value of the
// type's "+resourceName=" tag, or else client-gen's plural of the type's
// name (which also names the resource of the generated informers' generic
// lookup). Every type spec is read, those of grouped declarations too,
// with the comments client-gen reads its tags from (see typeComment).
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
			comments := commentsByEndLine(fset, f)
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					spec := s.(*ast.TypeSpec)
					tags := gengo.ExtractCommentTags("+", typeComment(fset, comments, spec.Name.Pos()))
					if _, ok := tags["genclient"]; !ok {
						continue
					}
					resource := ""
					if v := tags["resourceName"]; len(v) > 0 {
						resource = v[0]
					}
					if resource == "" {
						resource = plurals.Name(&types.Type{Name: types.Name{Name: spec.Name.Name}})
					}
					out = append(out, clientType{pkg: p.dir, group: group, kind: spec.Name.Name, resource: resource})
				}
			}
		}
	}
	return out, nil
}

// commentsByEndLine maps the line each comment group of f ends on to the
// group.
func commentsByEndLine(fset *token.FileSet, f *ast.File) map[int]*ast.CommentGroup {
	out := map[int]*ast.CommentGroup{}
	for _, c := range f.Comments {
		out[fset.Position(c.End()).Line] = c
	}
	return out
}

// typeComment returns the comment lines client-gen reads the tags of the
// type named at pos from, as gengo gives them to it: the comment group
// that ends on the line above the name (the doc comment, of the type spec
// in a grouped declaration, else of the declaration), preceded by the
// group that ends two lines above the first line of that one (or above
// the name, without a doc comment): the block separated from it by one
// blank line. Comment groups further up are not read.
func typeComment(fset *token.FileSet, comments map[int]*ast.CommentGroup, pos token.Pos) []string {
	line := fset.Position(pos).Line
	doc := comments[line-1]
	var second *ast.CommentGroup
	if doc == nil {
		second = comments[line-2]
	} else {
		second = comments[fset.Position(doc.List[0].Slash).Line-2]
	}
	return slices.Concat(commentLines(second), commentLines(doc))
}

// commentLines splits the text of c (which may be nil) into lines.
func commentLines(c *ast.CommentGroup) []string {
	text := strings.TrimRight(c.Text(), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
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
