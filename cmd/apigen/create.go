package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"golang.org/x/tools/go/ast/astutil"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The marker comments that init writes into the operator's files, where
// apigen create may add lines to them: above the marker, with its indent.
const (
	markFlags       = "// +apigen:scaffold:flags"
	markControllers = "// +apigen:scaffold:controllers"
	markWebhooks    = "// +apigen:scaffold:webhooks"
	markHandlers    = "// +apigen:scaffold:webhookhandlers"
	markVersions    = "// +apigen:scaffold:versions"
	markServed      = "// +apigen:scaffold:served"
)

// markWhere says where each marker is, for a file that has lost it.
var markWhere = map[string]string{
	markFlags:       "in run, before o.Bind(fs)",
	markControllers: "in runOperator, after the controllers are made, before operator.WithControllers",
	markWebhooks:    "in runOperator, after the options are made, before operator.Run",
	markHandlers:    "in webhookHandlers, in the list of the functions of the webhooks",
	markVersions:    "in the list of the kind's versions",
	markServed:      "in runOperator, in the group versions that operator.CheckServed checks",
}

// snippets are the blocks of main.go that init writes with -webhooks and
// apigen create webhook adds at the markers.
var snippets = map[string]string{
	"flags": `	// The webhooks' certificate, issued with --webhook-cert-secret for
	// the Service of deploy/webhook.yaml, and the configurations that get
	// its CA (zz_generated.webhooks.go).
	o.WebhookCertHosts, o.WebhookCABundles = webhookCertHosts, webhookCABundles`,
	"webhooks": `	handlers, err := webhookHandlers()
	if err != nil {
		return err
	}
	webhooks, err := o.Webhooks(cfg, handlers...)
	if err != nil {
		return err
	}
	opts = append(opts, operator.WithWebhooks(webhooks))`,
}

// handlersFunc is webhookHandlers of webhooks.go, which serves the
// webhooks that funcs return.
func handlersFunc(funcs ...string) string {
	var b strings.Builder
	b.WriteString(`// webhookHandlers returns the operator's webhooks at their paths, for
// Flags.Webhooks.
func webhookHandlers() ([]webhook.Option, error) {
	var handlers []webhook.Option
	for _, handler := range []func() (webhook.Option, error){
`)
	for _, f := range funcs {
		b.WriteString("\t\t" + f + ",\n")
	}
	b.WriteString("\t\t" + markHandlers + ` (apigen create webhook adds the webhooks of kinds above this line)
	} {
		h, err := handler()
		if err != nil {
			return nil, err
		}
		handlers = append(handlers, h)
	}
	return handlers, nil
}
`)
	return b.String()
}

// spokeLine is the entry of a spoke version in a conversion webhook's
// list of versions.
func spokeLine(kind, hubVersion, alias string) string {
	hub := upperFirst(hubVersion)
	return fmt.Sprintf("webhook.Spoke(%s.SchemeGroupVersion.String(), %s.Convert%sTo%s, %s.Convert%sFrom%s),", alias, alias, kind, hub, alias, kind, hub)
}

// parseScaffold parses the template of the scaffold file name.
func parseScaffold(name string) (*template.Template, error) {
	return template.New(name).Funcs(template.FuncMap{
		"snippet":  func(name string) string { return snippets[name] },
		"handlers": handlersFunc,
		"spoke":    spokeLine,
		"upper":    upperFirst,
	}).ParseFS(scaffoldTemplates, "scaffold/"+name)
}

// render executes the scaffold template name with data and formats it.
func render(name string, data any) ([]byte, error) {
	t, err := parseScaffold(name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return format.Source(b.Bytes())
}

// runCreate is apigen create webhook and apigen create api.
func runCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usages := map[string]string{
		"webhook": "apigen create webhook -kind KIND [-group GROUP] [-defaulting] [-validation] [-conversion]",
		"api":     "apigen create api -api GROUP/VERSION/KIND [-namespaced=false] [-hub]",
	}
	if len(args) == 0 || (args[0] != "webhook" && args[0] != "api") {
		_, _ = fmt.Fprintf(stderr, "usage: %s\n       %s\n", usages["webhook"], usages["api"])
		return 2
	}
	what := args[0]
	fs := flag.NewFlagSet("apigen create "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var w webhookRequest
	var api string
	var namespaced, newHub bool
	if what == "webhook" {
		fs.StringVar(&w.kind, "kind", "", "The kind of the operator's API that gets the webhooks (required).")
		fs.StringVar(&w.group, "group", "", "The kind's API group, where two groups have a kind of that name.")
		fs.BoolVar(&w.defaulting, "defaulting", false, "A defaulting (mutating) webhook of the kind.")
		fs.BoolVar(&w.validation, "validation", false, "A validating webhook of the kind.")
		fs.BoolVar(&w.conversion, "conversion", false, "A conversion webhook between the kind's versions (needs two: apigen create api adds one).")
	} else {
		fs.StringVar(&api, "api", "", "The new kind, or new version of a kind, GROUP/VERSION/KIND (example.com/v2/Widget) (required).")
		fs.BoolVar(&namespaced, "namespaced", true, "A new kind is namespaced; -namespaced=false makes it cluster-scoped (+genclient:nonNamespaced and scope=Cluster in its types, and a controller and test without namespaces). A new version has its kind's scope, which this may only repeat.")
		fs.BoolVar(&newHub, "hub", false, "A new version of a kind of one version becomes its hub and storage version (+kubebuilder:storageversion moves to it), and the old version's package gets the conversions to and from it. Without -hub, the kind's hub stays its hub, and the new version's package gets the conversions.")
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: "+usages[what])
		_, _ = fmt.Fprintln(stderr, "Adds to an operator that apigen init made, then generates as generate.go says and runs go mod tidy.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "apigen create %s: unexpected arguments %q\n", what, fs.Args())
		return 2
	}
	var op *operatorDir
	var plan *createPlan
	mod, err := findModule()
	if err == nil {
		op, err = loadOperator(mod)
	}
	if err == nil {
		if what == "webhook" {
			plan, err = op.planWebhooks(w)
		} else {
			var scope *bool // -namespaced where given
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "namespaced" {
					scope = &namespaced
				}
			})
			plan, err = op.planAPI(ctx, apiRequest{api: api, namespaced: scope, hub: newHub})
		}
	}
	if err == nil {
		err = plan.apply(ctx, op, stdout)
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "apigen create %s: %v\n", what, err)
		return 1
	}
	return 0
}

// operatorDir is an operator that apigen init made, as create finds it.
type operatorDir struct {
	mod      module
	name     string   // -rbac-role of generate.go
	genArgs  []string // the arguments of generate.go's go:generate go tool apigen, expanded as go generate expands them
	genWords []string // those arguments as the line writes them, unexpanded
	genLine  string   // that line, whole, without the \r of a CRLF line end
	genAt    int      // the offset in genSrc where genLine starts
	genSrc   []byte   // generate.go as read
	kinds    []kindVersion
	mainFile string // main.go
}

// kindVersion is a kind at one version of the operator's API packages.
type kindVersion struct {
	group, version, kind, plural string
	groupDir                     string // the directory of its package under apis, which names the generated group packages
	groupGoName                  string // the +groupGoName of its package's doc.go, if any: client-gen's and informer-gen's Go name of the group
	dir                          string // apis/<group dir>/<version>, slash-separated
	file                         string // of the type, slash-separated
	storage                      bool   // +kubebuilder:storageversion
	nonNamespaced, clusterScope  bool   // +genclient:nonNamespaced, +kubebuilder:resource:scope=Cluster
	genclient                    int    // offset of the end of its "// +genclient" line in file, or -1
}

var generateLine = regexp.MustCompile(`(?m)^//go:generate go tool apigen( .*)?$`)

// loadOperator reads the operator of the module mod.
func loadOperator(mod module) (*operatorDir, error) {
	op := &operatorDir{mod: mod, mainFile: filepath.Join(mod.root, "main.go")}
	notInit := fmt.Errorf("%s is not an operator that apigen init made: it has no main.go and generate.go with a \"//go:generate go tool apigen\" line naming -rbac-role", mod.root)
	if _, err := os.Stat(op.mainFile); err != nil {
		return nil, notInit
	}
	gen, err := os.ReadFile(filepath.Join(mod.root, "generate.go"))
	if err != nil {
		return nil, notInit
	}
	op.genSrc = gen
	lines := generateLine.FindAllStringIndex(string(gen), -1)
	if len(lines) > 1 {
		return nil, fmt.Errorf("%s has %d \"//go:generate go tool apigen\" lines: apigen create changes the operator's line and cannot tell which one it is; keep only the operator's (the one apigen init wrote) in generate.go and move the others into another file of the package", filepath.Join(mod.root, "generate.go"), len(lines))
	}
	if len(lines) == 0 {
		return nil, notInit
	}
	// go generate reads a line without the \r of a CRLF line end; the
	// line written back replaces genLine only, at genAt, so keeps the
	// file's end.
	op.genAt = lines[0][0]
	op.genLine = strings.TrimSuffix(string(gen[lines[0][0]:lines[0][1]]), "\r")
	op.genWords, err = splitGenerate(strings.TrimPrefix(op.genLine, "//go:generate go tool apigen"))
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	op.genArgs = expandGenerate(op.genWords, mod.root, bytes.Count(gen[:lines[0][0]], []byte("\n"))+1)
	cfg, err := parseConfig(op.genArgs)
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	if cfg.rbacRole == "" {
		return nil, notInit
	}
	op.name = cfg.rbacRole
	if cfg.out == "" || cfg.crdDir == "" {
		return nil, fmt.Errorf("the operator %s has no API of its own (apigen init without -api, which reconciles ConfigMaps): create adds to the API packages under apis that init -api makes", op.name)
	}
	// The line runs in the module root: ./apis and apis/ are apis.
	if path.Clean(filepath.ToSlash(cfg.apis)) != "apis" {
		return nil, fmt.Errorf("generate.go's go:generate line has the API directory %q: create adds to the API packages under apis, the API directory of init -api", cfg.apis)
	}
	op.kinds, err = scanKinds(mod.root)
	if err != nil {
		return nil, err
	}
	return op, nil
}

// scanKinds returns the kinds of the API packages apis/<group>/<version>.
func scanKinds(root string) ([]kindVersion, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "apis", "*", "*"))
	if err != nil {
		return nil, err
	}
	var out []kindVersion
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("reading the API package %s: %w", dir, err)
		}
		rel := filepath.ToSlash(must(filepath.Rel(root, dir)))
		for _, pkg := range pkgs {
			group, groupGoName := "", ""
			for name, f := range pkg.Files {
				for _, c := range f.Comments {
					for _, line := range strings.Split(c.Text(), "\n") {
						if g, ok := strings.CutPrefix(strings.TrimSpace(line), "+groupName="); ok {
							group = g
						}
						// The generators read it from the comments of
						// doc.go only, the first of them.
						if g, ok := strings.CutPrefix(strings.TrimSpace(line), "+groupGoName="); ok && filepath.Base(name) == "doc.go" && groupGoName == "" {
							groupGoName = g
						}
					}
				}
			}
			for name, f := range pkg.Files {
				src, err := os.ReadFile(name)
				if err != nil {
					return nil, err
				}
				for _, decl := range f.Decls {
					g, ok := decl.(*ast.GenDecl)
					if !ok || g.Tok != token.TYPE || len(g.Specs) != 1 {
						continue
					}
					spec := g.Specs[0].(*ast.TypeSpec)
					k := kindVersion{group: group, groupGoName: groupGoName, version: filepath.Base(dir), kind: spec.Name.Name, dir: rel, genclient: -1,
						file: filepath.ToSlash(must(filepath.Rel(root, name)))}
					k.groupDir = filepath.Base(filepath.Dir(dir))
					genclient := false
					for _, c := range typeComments(fset, f, g) {
						for _, line := range c.List {
							text := strings.TrimSpace(strings.TrimPrefix(line.Text, "//"))
							switch {
							case text == "+genclient":
								genclient = true
								k.genclient = fset.Position(line.End()).Offset
							case strings.HasPrefix(text, "+genclient:nonNamespaced"):
								genclient = true
								k.nonNamespaced = true
							case text == "+kubebuilder:storageversion":
								k.storage = true
							case strings.HasPrefix(text, "+kubebuilder:resource:"):
								for _, arg := range strings.Split(strings.TrimPrefix(text, "+kubebuilder:resource:"), ",") {
									if p, ok := strings.CutPrefix(arg, "path="); ok {
										k.plural = p
									}
									if strings.TrimSpace(arg) == "scope=Cluster" {
										k.clusterScope = true
									}
								}
							}
						}
					}
					if !genclient {
						continue
					}
					if k.genclient >= 0 && (k.genclient > len(src) || !bytes.HasSuffix(src[:k.genclient], []byte("+genclient"))) {
						k.genclient = -1
					}
					if k.plural == "" {
						k.plural = crdPlural(k.kind)
					}
					out = append(out, k)
				}
			}
		}
	}
	return out, nil
}

// typeComments are the comment groups of a type declaration: its doc
// comment and a group of markers above it, separated by a blank line.
func typeComments(fset *token.FileSet, f *ast.File, decl *ast.GenDecl) []*ast.CommentGroup {
	after := f.Name.End()
	for _, d := range f.Decls {
		if d.End() <= decl.Pos() {
			after = max(after, d.End())
		}
	}
	return commentsAbove(fset, f, decl.Pos(), after)
}

// commentsAbove are the comment groups of f above pos and after the
// position after, not on its line, nearest first: the one that ends on
// the line above pos, or the line above that, and one more that ends on
// the line above it, or the line above that.
func commentsAbove(fset *token.FileSet, f *ast.File, pos, after token.Pos) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	line, afterLine := fset.Position(pos).Line, fset.Position(after).Line
	for _, c := range slices.Backward(f.Comments) {
		if c.End() >= pos {
			continue
		}
		if c.Pos() <= after || fset.Position(c.Pos()).Line == afterLine || fset.Position(c.End()).Line < line-2 || len(out) == 2 {
			break
		}
		out = append(out, c)
		line = fset.Position(c.Pos()).Line
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// versionsOf returns the versions of kind in the operator's API, of group
// if not empty, and its hub: the storage version, or the only one.
func (op *operatorDir) versionsOf(kind, group string) (versions []kindVersion, hub kindVersion, err error) {
	groups := map[string]bool{}
	for _, k := range op.kinds {
		if k.kind == kind && (group == "" || k.group == group) {
			versions = append(versions, k)
			groups[k.group] = true
		}
	}
	if len(versions) == 0 {
		var known []string
		for _, k := range op.kinds {
			known = append(known, k.group+"/"+k.version+"/"+k.kind)
		}
		return nil, hub, fmt.Errorf("the operator's API has no kind %s%s (it has %s)", kind, map[bool]string{true: " in group " + group}[group != ""], strings.Join(known, ", "))
	}
	if len(groups) > 1 {
		return nil, hub, fmt.Errorf("the kind %s is in the groups %s: say which with -group", kind, strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	}
	var storage []kindVersion
	for _, v := range versions {
		if v.storage {
			storage = append(storage, v)
		}
	}
	switch {
	case len(versions) == 1:
		return versions, versions[0], nil
	case len(storage) == 1:
		return versions, storage[0], nil
	}
	return nil, hub, fmt.Errorf("the kind %s has %d versions and %d with +kubebuilder:storageversion: mark one, the hub", kind, len(versions), len(storage))
}

// createPlan is what a create command writes: new files, and edits of the
// operator's files at their markers, all made before the first write.
type createPlan struct {
	files    map[string][]byte // new files, by slash path in the module
	edits    map[string][]byte // changed files, whole
	read     map[string][]byte // what the changed files held when the plan read them
	printed  []string          // the lines the user adds, where a file has no marker
	genArgs  []string          // generate.go's arguments after the change, expanded: the generation's
	genWords []string          // the same as the line writes them, unexpanded
	notes    []string          // what create says when it is done
}

func newPlan(op *operatorDir) *createPlan {
	return &createPlan{files: map[string][]byte{}, edits: map[string][]byte{}, read: map[string][]byte{}, genArgs: slices.Clone(op.genArgs), genWords: slices.Clone(op.genWords)}
}

// readFile returns what the module's file rel holds, and remembers what
// it held when first read: apply writes no edit of a file that changed
// since the plan read it.
func (p *createPlan) readFile(op *operatorDir, rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(op.mod.root, filepath.FromSlash(rel)))
	if _, ok := p.read[rel]; !ok && err == nil {
		p.read[rel] = b
	}
	return b, err
}

// add plans the new file rel from the template name, refusing one that
// exists.
func (p *createPlan) add(op *operatorDir, rel, tmpl string, data any) error {
	if _, err := os.Lstat(filepath.Join(op.mod.root, filepath.FromSlash(rel))); err == nil {
		return fmt.Errorf("the module already has %s", rel)
	}
	src, err := render(tmpl, data)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	p.files[rel] = src
	return nil
}

// current is the text of the module's file rel as planned so far.
func (p *createPlan) current(op *operatorDir, rel string) ([]byte, error) {
	if b, ok := p.edits[rel]; ok {
		return b, nil
	}
	if b, ok := p.files[rel]; ok {
		return b, nil
	}
	return p.readFile(op, rel)
}

// insert plans lines above the marker line of rel, with its indent, and
// imports (name path pairs, name empty for the default) into rel; without
// the marker, it plans printing them instead and leaves rel as it is. The
// lines and imports are formatted on their own and spliced in with the
// marker line's line end (LF or CRLF): every other byte of rel stays as
// it was.
func (p *createPlan) insert(op *operatorDir, rel, marker, lines string, imports ...[2]string) error {
	src, err := p.current(op, rel)
	if err != nil {
		return err
	}
	text := string(src)
	at, eol := -1, "\n"
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text) - off
		}
		if strings.HasPrefix(strings.TrimSpace(text[off:off+end]), marker) {
			at = off
			if strings.HasSuffix(text[off:off+end], "\r") {
				eol = "\r\n"
			}
			break
		}
		off += end + 1
	}
	if at < 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s has no %q line, where apigen adds to it (%s): add these lines there yourself:\n", rel, marker, markWhere[marker])
		for _, imp := range imports {
			fmt.Fprintf(&b, "\timport %s %q\n", imp[0], imp[1])
		}
		b.WriteString(lines + "\n")
		p.printed = append(p.printed, b.String())
		return nil
	}
	formatted, err := formatLines(strings.Trim(lines, "\n"))
	if err != nil {
		return fmt.Errorf("the lines to add to %s: %w", rel, err)
	}
	indent := text[at : at+len(text[at:])-len(strings.TrimLeft(text[at:], " \t"))]
	var b strings.Builder
	for _, l := range formatted {
		if l != "" {
			b.WriteString(indent + l)
		}
		b.WriteString(eol)
	}
	text = text[:at] + b.String() + text[at:]
	for _, imp := range imports {
		if text, err = insertImport(text, imp[0], imp[1], eol); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	if _, err := parser.ParseFile(token.NewFileSet(), rel, text, parser.SkipObjectResolution); err != nil {
		return fmt.Errorf("%s after adding to it: %w", rel, err)
	}
	p.edits[rel] = []byte(text)
	return nil
}

// formatLines formats lines on their own, as gofmt does statements of a
// function body or else the elements of a composite literal, and returns
// them one by one, indented relative to the block they are in.
func formatLines(lines string) ([]string, error) {
	var firstErr error
	for _, block := range []string{"func _() {\n", "var _ = []any{\n"} {
		src, err := format.Source([]byte("package p\n\n" + block + lines + "\n}\n"))
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		body := strings.TrimSuffix(string(src), "\n}\n")
		body = body[strings.Index(body, "{\n")+len("{\n"):]
		out := strings.Split(body, "\n")
		for i, l := range out {
			out[i] = strings.TrimPrefix(l, "\t")
		}
		return out, nil
	}
	return nil, firstErr
}

// insertImport adds to the Go source text the import of importPath,
// named name (empty for the default), unless it has it: as a line, in its
// sorted place, of the group of imports (lines without a blank one
// between, which gofmt sorts) where the import sharing the longest prefix
// with importPath is, or else, without a parenthesized import
// declaration, as a declaration of its own. Every other byte of text
// stays as it was.
func insertImport(text, name, importPath, eol string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", text, parser.ImportsOnly|parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	spec := strconv.Quote(importPath)
	if name != "" {
		spec = name + " " + spec
	}
	offset := func(pos token.Pos) int { return fset.Position(pos).Offset }
	line := func(pos token.Pos) int { return fset.Position(pos).Line }
	lineStart := func(off int) int { return strings.LastIndexByte(text[:off], '\n') + 1 }
	lineEnd := func(off int) int {
		if end := strings.IndexByte(text[off:], '\n'); end >= 0 {
			return off + end + 1
		}
		return len(text)
	}
	var (
		decl, last *ast.GenDecl // of the import sharing the longest prefix; the last import declaration
		at, best   = -1, -1     // that import's index in decl, the length of the prefix
	)
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		last = g
		for i, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return "", err
			}
			if p == importPath && (is.Name == nil && name == "" || is.Name != nil && is.Name.Name == name) {
				return text, nil
			}
			if n := len(commonPrefix(p, importPath)); g.Lparen.IsValid() && n > best {
				decl, at, best = g, i, n
			}
		}
	}
	if decl == nil {
		if last == nil {
			return text[:lineEnd(offset(f.Name.End()))] + eol + "import " + spec + eol + text[lineEnd(offset(f.Name.End())):], nil
		}
		end := lineEnd(offset(last.End()))
		return text[:end] + "import " + spec + eol + text[end:], nil
	}
	specs := decl.Specs
	lo, hi := at, at+1
	for lo > 0 && line(specs[lo].Pos()) <= line(specs[lo-1].End())+1 {
		lo--
	}
	for hi < len(specs) && line(specs[hi].Pos()) <= line(specs[hi-1].End())+1 {
		hi++
	}
	first := offset(specs[lo].Pos())
	indent := text[lineStart(first):first]
	if strings.Trim(indent, " \t") != "" {
		indent = "\t"
	}
	// Above the first import of the group that sorts after the new one,
	// or else below the group's last.
	where := -1
	for _, s := range specs[lo:hi] {
		is := s.(*ast.ImportSpec)
		if p, _ := strconv.Unquote(is.Path.Value); p > importPath {
			start := is.Pos()
			if is.Doc != nil {
				start = is.Doc.Pos()
			}
			where = lineStart(offset(start))
			break
		}
	}
	if where < 0 {
		lastSpec := specs[hi-1].(*ast.ImportSpec)
		end := lastSpec.End()
		if lastSpec.Comment != nil {
			end = lastSpec.Comment.End()
		}
		where = lineEnd(offset(end))
	}
	return text[:where] + indent + spec + eol + text[where:], nil
}

// commonPrefix is the longest prefix of a and b.
func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// webhookRequest are the flags of apigen create webhook.
type webhookRequest struct {
	kind, group                        string
	defaulting, validation, conversion bool
}

// webhookData is what a webhook's templates are executed with.
type webhookData struct {
	*scaffold
	Type   string // default, validate or convert
	Spokes []kindVersion
}

// Alias and APIDir of a spoke, for the templates.
func (k kindVersion) Alias() string  { return k.groupDir + k.version }
func (k kindVersion) APIDir() string { return k.dir }

// scaffoldOf returns the scaffold data of the kind k of the operator, in
// its package's directory.
func (op *operatorDir) scaffoldOf(k kindVersion) (*scaffold, error) {
	s := &scaffold{Name: op.name}
	if err := s.derive(k.group + "/" + k.version + "/" + k.kind); err != nil {
		return nil, err
	}
	s.Module, s.Plural, s.ClusterScoped = op.mod.path, k.plural, k.clusterScope
	if err := op.inExistingGroup(s, k.groupDir); err != nil {
		return nil, err
	}
	return s, nil
}

// inExistingGroup puts the API of s, of a group that the operator has
// already, in dir, the directory under apis of the group's packages, with
// their Go name of the group (+groupGoName, which the generators name the
// group's methods after), and refuses a directory that makes packages or
// an import name the operator cannot compile. The group's first label,
// which need not name a Go package then, is not checked.
func (op *operatorDir) inExistingGroup(s *scaffold, dir string) error {
	s.inGroupDir(dir)
	for _, k := range op.kinds {
		if k.group == s.Group && k.groupGoName != "" {
			s.GroupGoName, s.GroupMethod = k.groupGoName, upperFirst(k.groupGoName)
			break
		}
	}
	return s.checkPackageNames(fmt.Sprintf("the directory apis/%s of the group %s's packages", dir, s.Group), "rename the directory")
}

// groupMethod returns the Go name of the group that names its methods of
// the generated clientset and informer factory (Toys(), ToysV1()): the
// +groupGoName of its packages, else its first label, capitalized.
func (op *operatorDir) groupMethod(group string) string {
	for _, k := range op.kinds {
		if k.group == group && k.groupGoName != "" {
			return upperFirst(k.groupGoName)
		}
	}
	label, _, _ := strings.Cut(group, ".")
	return upperFirst(label)
}

// groupDirOf returns the directory under apis of the packages of the
// group that the operator has already (apigen generates for one that is
// not the group's first label, such as apis/gadgets with
// +groupName=toys.example.com), or "" if it has none.
func (op *operatorDir) groupDirOf(group string) (string, error) {
	dir := ""
	for _, k := range op.kinds {
		if k.group != group || k.groupDir == dir {
			continue
		}
		if dir != "" {
			return "", fmt.Errorf("the group %s has packages in apis/%s and apis/%s: apigen create cannot tell which directory its new package goes in; keep the group's packages in one directory", group, dir, k.groupDir)
		}
		dir = k.groupDir
	}
	return dir, nil
}

// planWebhooks plans apigen create webhook.
func (op *operatorDir) planWebhooks(w webhookRequest) (*createPlan, error) {
	if w.kind == "" {
		return nil, errors.New("-kind is required: the kind that gets the webhooks")
	}
	if !w.defaulting && !w.validation && !w.conversion {
		return nil, errors.New("no webhook asked for: give -defaulting, -validation or -conversion, or several")
	}
	// The webhooks' markers name no Service: the webhook Service is named
	// after the operator, as init's are, and must be a name the API
	// server takes.
	service := op.name + serviceSuffix
	if problems := validation.IsDNS1035Label(service); len(problems) > 0 {
		return nil, fmt.Errorf("the operator's name %q (generate.go's -rbac-role) makes the webhook Service %q, which is not a Service name (%s): nothing written",
			op.name, service, strings.Join(problems, "; "))
	}
	versions, hub, err := op.versionsOf(w.kind, w.group)
	if err != nil {
		return nil, err
	}
	s, err := op.scaffoldOf(hub)
	if err != nil {
		return nil, err
	}
	own, err := os.ReadDir(op.mod.root)
	if err != nil {
		return nil, err
	}
	var mainSrc bytes.Buffer
	for _, e := range own {
		if strings.HasSuffix(e.Name(), ".go") && !e.IsDir() {
			b, err := os.ReadFile(filepath.Join(op.mod.root, e.Name()))
			if err != nil {
				return nil, err
			}
			mainSrc.Write(b)
		}
	}
	// The line's webhook flags, however given (-webhook DIR,
	// -webhook=DIR, --webhook ...), are the user's.
	cfg, err := parseConfig(op.genArgs)
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	// A line may give -webhook-paths without -webhook: the generation of
	// the webhooks create turns on reads the user's patterns then.
	pathsGiven := false
	scanFlags(op.genArgs, func(_ int, name string, _ bool) {
		pathsGiven = pathsGiven || name == "webhook-paths"
	})
	// The sources where the operator's webhooks are, by package
	// directory: the root's files, and those with webhook markers of the
	// packages of the line's -webhook-paths.
	webhookSrc := map[string][]byte{".": mainSrc.Bytes()}
	if cfg.webhookDir != "" || pathsGiven {
		marked, err := webhookMarkerPackages(op.mod, cfg.webhookPaths)
		if err != nil {
			return nil, fmt.Errorf("generate.go's -webhook-paths: %w", err)
		}
		for dir, src := range marked {
			if dir != "." {
				webhookSrc["./"+dir] = src
			}
		}
	}
	p := newPlan(op)
	var funcs []string
	for _, t := range []struct {
		on        bool
		typ, name string
	}{{w.defaulting, "default", "defaulting"}, {w.validation, "validate", "validation"}, {w.conversion, "convert", "conversion"}} {
		if !t.on {
			continue
		}
		// The path in any case: an older apigen's had the kind's first
		// letter alone lowered (/default-dNSRecord).
		webhookPath := s.WebhookPath(t.typ)
		for _, dir := range slices.Sorted(maps.Keys(webhookSrc)) {
			if regexp.MustCompile(`(?i)path=` + regexp.QuoteMeta(webhookPath) + `(,|\s|$)`).Match(webhookSrc[dir]) {
				pkg := "the operator's package"
				if dir != "." {
					pkg = "the package " + dir
				}
				return nil, fmt.Errorf("%s has a %s webhook already (a marker of path %s in %s): nothing written", w.kind, t.name, webhookPath, pkg)
			}
		}
		d := webhookData{scaffold: s, Type: t.typ}
		if t.typ == "convert" {
			if len(versions) < 2 {
				return nil, fmt.Errorf("%s has one version, %s: a conversion webhook converts between two or more (apigen create api -api %s/<version>/%s adds one)", w.kind, hub.version, hub.group, w.kind)
			}
			for _, v := range versions {
				if v.version != hub.version {
					d.Spokes = append(d.Spokes, v)
				}
			}
			if err := op.refuseMissingConversions(w.kind, hub, d.Spokes); err != nil {
				return nil, err
			}
		}
		base := strings.ToLower(w.kind) + "_" + t.name + "_webhook"
		if err := p.add(op, base+".go", "create_webhook.go.tmpl", d); err != nil {
			return nil, err
		}
		if err := p.add(op, base+"_test.go", "create_webhook_test.go.tmpl", d); err != nil {
			return nil, err
		}
		funcs = append(funcs, t.typ+w.kind+"Webhook")
	}
	// The generation takes the webhook markers of one package, and
	// create writes its webhooks, markers and all, into the root's: they
	// cannot join the markers of another package.
	if others := slices.DeleteFunc(slices.Sorted(maps.Keys(webhookSrc)), func(dir string) bool { return dir == "." }); len(others) > 0 {
		return nil, fmt.Errorf("the operator's webhook markers are in %s (generate.go's -webhook-paths %q), and apigen create writes its webhooks, with their markers, into the module root, while the generation takes the markers of one package: move those webhooks into the root package (and set -webhook-paths to .), or add this one to %s yourself; nothing written",
			strings.Join(others, " and "), strings.Join(cfg.webhookPaths, " "), others[0])
	}
	// The server of the webhooks: webhookHandlers serves them all.
	if _, err := os.Stat(filepath.Join(op.mod.root, "webhooks.go")); err == nil {
		var lines []string
		for _, f := range funcs {
			lines = append(lines, f+",")
		}
		if err := p.insert(op, "webhooks.go", markHandlers, strings.Join(lines, "\n")); err != nil {
			return nil, err
		}
	} else {
		src, err := format.Source([]byte("package main\n\nimport \"github.com/ctrlkit/ctrlkit/webhook\"\n\n" + handlersFunc(funcs...)))
		if err != nil {
			return nil, err
		}
		p.files["webhooks.go"] = src
	}
	mainText, err := os.ReadFile(op.mainFile)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(mainText, []byte("webhookCertHosts")) {
		if err := p.insert(op, "main.go", markFlags, snippets["flags"]); err != nil {
			return nil, err
		}
	}
	if !bytes.Contains(mainText, []byte("webhookHandlers()")) {
		if err := p.insert(op, "main.go", markWebhooks, snippets["webhooks"]); err != nil {
			return nil, err
		}
	}
	// Without a webhook directory, the webhooks are generated into deploy,
	// from the root package, or from the line's own -webhook-paths with
	// the root among them (a second -webhook-paths would override it).
	if cfg.webhookDir == "" && !pathsGiven {
		p.addFlags("-webhook", "deploy", "-webhook-paths", ".")
		return p, nil
	}
	if cfg.webhookDir == "" {
		p.addFlags("-webhook", "deploy")
	}
	if err := p.readRoot(op, "webhook-paths", cfg.webhookPaths); err != nil {
		return nil, err
	}
	return p, nil
}

// refuseMissingConversions refuses the conversion webhook of kind, whose
// hub is hub, where a package of its spokes does not declare the
// functions that the webhook converts with, Convert<Kind>To<Hub> and
// Convert<Kind>From<Hub>, naming those missing.
func (op *operatorDir) refuseMissingConversions(kind string, hub kindVersion, spokes []kindVersion) error {
	to, from := "Convert"+kind+"To"+upperFirst(hub.version), "Convert"+kind+"From"+upperFirst(hub.version)
	var missing []string
	for _, v := range spokes {
		decls, err := packageDecls(filepath.Join(op.mod.root, filepath.FromSlash(v.dir)))
		if err != nil {
			return fmt.Errorf("reading the API package %s: %w", v.dir, err)
		}
		var lacks []string
		for _, name := range []string{to, from} {
			if d, ok := decls[name]; !ok || !isFunc(d) {
				lacks = append(lacks, name)
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, fmt.Sprintf("the package %s (%s) declares no %s", v.dir, v.version, strings.Join(lacks, " and no ")))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: the hub is the version marked +kubebuilder:storageversion, %s (%s); each other version's package converts to and from it with "+
		"func %s(src *%s, dst *%s.%s) error and func %s(src *%s.%s, dst *%s) error, which the conversion webhook calls: write them (apigen create api writes them into a new version's package, or with -hub into the old hub's; docs/new-api.md), or move the marker to the version that has them, then run apigen create webhook again; nothing written",
		strings.Join(missing, "; "), hub.version, hub.file, to, kind, hub.version, kind, from, hub.version, kind, kind)
}

// webhookMarker matches a line of a webhook marker that makes its package
// one of the webhooks' for the generation.
var webhookMarker = regexp.MustCompile(`(?m)^[ \t]*//[ \t]*\+(kubebuilder:webhook:|ctrlkit:conversionwebhook\b)`)

// webhookMarkerPackages returns the Go files (but tests) of the packages
// that patterns match (as patternDirs matches them) that hold webhook
// markers, by the package's directory relative to the module root, the
// files of each one after another. A pattern's directory that does not
// exist has none.
func webhookMarkerPackages(mod module, patterns []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, pat := range patterns {
		dirs, err := patternDirs(mod, []string{pat})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, dir := range dirs {
			entries, err := os.ReadDir(filepath.Join(mod.root, filepath.FromSlash(dir)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			var src []byte
			for _, e := range entries {
				if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
					continue
				}
				b, err := os.ReadFile(filepath.Join(mod.root, filepath.FromSlash(dir), e.Name()))
				if err != nil {
					return nil, err
				}
				if webhookMarker.Match(b) {
					src = append(src, b...)
				}
			}
			if src != nil {
				out[dir] = src
			}
		}
	}
	return out, nil
}

// readRoot has the plan's generate.go line read the module root's
// package, where create writes the controllers and webhooks with their
// markers, with the patterns of the flag (rbac-paths, webhook-paths):
// where patterns, the flag's, do not match the root as apigen matches
// them (patternDirs), it adds "." to the flag's value, and says so.
func (p *createPlan) readRoot(op *operatorDir, flag string, patterns []string) error {
	// A pattern ending in "/..." adds the directories under its own, which
	// need not exist yet, to it: only its own can be the root.
	tops := make([]string, len(patterns))
	for i, pat := range patterns {
		tops[i] = strings.TrimSuffix(pat, "/...")
		if pat == "..." {
			tops[i] = "."
		}
	}
	dirs, err := patternDirs(op.mod, tops)
	if err != nil {
		return fmt.Errorf("generate.go's -%s: %w", flag, err)
	}
	if slices.Contains(dirs, ".") {
		return nil
	}
	value := strings.Join(append(slices.Clone(patterns), "."), " ")
	// The flag's value is its last one before the first argument that is
	// not a flag, where parsing stops; without one, the flag is added.
	at, prefix := -1, "" // the argument with the value, and what precedes the value in it
	scanFlags(p.genArgs, func(i int, name string, hasValue bool) {
		switch {
		case name == flag && hasValue:
			at, prefix = i, p.genArgs[i][:strings.Index(p.genArgs[i], "=")+1]
		case name == flag:
			at, prefix = i+1, ""
		}
	})
	if at < 0 || at >= len(p.genArgs) {
		p.addFlags("-"+flag, value)
	} else {
		p.genArgs[at] = prefix + value
		p.genWords[at] += " ."
	}
	p.notes = append(p.notes, fmt.Sprintf("generate.go's -%s %q did not read the module's root package, where create writes its files with their markers: it reads %q now", flag, strings.Join(patterns, " "), value))
	return nil
}

// scanFlags walks the generation's arguments args as the flag package
// parses them, calling each with the index of each flag's argument, the
// flag's name and whether the argument holds its value (-name=value),
// and returns the index of the first argument that is not a flag, where
// parsing stops (len(args) if there is none).
func scanFlags(args []string, each func(i int, name string, hasValue bool)) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") {
			return i
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		each(i, name, hasValue)
		if !hasValue && name != "verify" {
			i++
		}
	}
	return len(args)
}

// addFlags adds flags, arguments of the generation, to the plan's
// arguments before the first one that is not a flag (the API directory),
// where parsing stops.
func (p *createPlan) addFlags(flags ...string) {
	end := scanFlags(p.genArgs, func(int, string, bool) {})
	p.genArgs = slices.Insert(p.genArgs, end, flags...)
	p.genWords = slices.Insert(p.genWords, end, flags...)
}

// apiData is what the templates of a new kind or version are executed with.
type apiData struct {
	*scaffold
	HubVersion, HubAlias, HubAPIDir, HubMethod string
	Fields                                     []string // of a new version: the kind's fields that its conversion carries over
}

// apiRequest is what apigen create api is asked for.
type apiRequest struct {
	api        string // GROUP/VERSION/KIND
	namespaced *bool  // -namespaced, nil where not given
	hub        bool   // -hub
}

// planAPI plans apigen create api. A new kind is namespaced unless
// namespaced is false; a new version has its kind's scope (a CRD's scope
// cannot change on a cluster that has it), which namespaced, where given,
// must be. Without hub, the kind's hub stays its hub and the new version's
// package gets the conversions to and from it; with hub, a new version of
// a kind that has one version becomes its hub and storage version (the
// +kubebuilder:storageversion marker moves to its type), and the
// conversions between the two, to and from the new hub, go into the old
// version's package, the new one getting none; a new kind, a kind of
// several versions (whose spokes convert through the old hub) and one
// with a conversion webhook are refused.
func (op *operatorDir) planAPI(ctx context.Context, req apiRequest) (*createPlan, error) {
	api, namespaced, newHub := req.api, req.namespaced, req.hub
	if api == "" {
		return nil, errors.New("-api is required: GROUP/VERSION/KIND, such as example.com/v2/Widget")
	}
	s := &scaffold{Name: op.name}
	if err := s.derive(api); err != nil {
		return nil, err
	}
	s.Module = op.mod.path
	groupDir, err := op.groupDirOf(s.Group)
	if err != nil {
		return nil, err
	}
	if groupDir != "" {
		err = op.inExistingGroup(s, groupDir)
	} else {
		err = s.checkGroupLabel(api)
	}
	if err != nil {
		return nil, err
	}
	pkgKinds := 0
	for _, k := range op.kinds {
		switch {
		case k.group == s.Group && k.version == s.Version && k.kind == s.Kind:
			return nil, fmt.Errorf("the operator's API has %s already (%s): nothing written", api, k.file)
		case k.groupDir == s.GroupDir && k.group != s.Group:
			return nil, fmt.Errorf("the group %s has its packages in apis/%s, which %s's are in: choose a group whose first label is another word", s.Group, s.GroupDir, k.group)
		// The generated packages of a group are named after its Go name
		// in lower case: names that differ in case only clash too.
		case k.group != s.Group && strings.EqualFold(op.groupMethod(k.group), s.GroupMethod):
			return nil, fmt.Errorf("the group %s's methods of the generated clientset and informer factory would be %s(), as %s's are: choose a group whose first label is another word", s.Group, s.GroupMethod, k.group)
		case k.dir == s.APIDir:
			pkgKinds++
		}
	}
	p := newPlan(op)
	pkgExists := false
	if _, err := os.Stat(filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir))); err == nil {
		pkgExists = true
	}
	typesFile := path.Join(s.APIDir, "types.go")
	if pkgExists {
		if pkgKinds == 0 {
			return nil, fmt.Errorf("%s exists and is not an API package of the group %s", s.APIDir, s.Group)
		}
		typesFile = path.Join(s.APIDir, strings.ToLower(s.Kind)+"_types.go")
	} else if err := p.add(op, path.Join(s.APIDir, "doc.go"), "doc.go.tmpl", s); err != nil {
		return nil, err
	}
	versions, hub, err := op.versionsOf(s.Kind, s.Group)
	if err != nil && slices.ContainsFunc(op.kinds, func(k kindVersion) bool { return k.kind == s.Kind && k.group == s.Group }) {
		return nil, err // versions without a storage version
	}
	if newHub {
		if herr := op.refuseNewHub(s, versions, hub, err == nil); herr != nil {
			return nil, herr
		}
	}
	var fields []string // of a new version: the fields its conversion carries
	if err != nil {
		s.ClusterScoped = namespaced != nil && !*namespaced
		if err := op.refuseClash(s); err != nil {
			return nil, err
		}
		if err := p.add(op, typesFile, "types.go.tmpl", s); err != nil {
			return nil, err
		}
	} else {
		s.Plural = hub.plural
		var src []byte
		var verr error
		if src, fields, verr = op.versionTypes(ctx, s, versions, hub); verr != nil {
			return nil, verr
		}
		// The versions agree on the scope (versionTypes checked it).
		s.ClusterScoped = hub.clusterScope
		if namespaced != nil && *namespaced == hub.clusterScope {
			scope := map[bool]string{true: "cluster-scoped (+genclient:nonNamespaced and scope=Cluster in " + hub.file + ")", false: "namespaced (no +genclient:nonNamespaced and scope=Cluster in " + hub.file + ")"}[hub.clusterScope]
			return nil, fmt.Errorf("-namespaced=%t: %s is %s, and a new version has its kind's scope, which a cluster that has the CRD cannot change: leave -namespaced out; nothing written", *namespaced, s.Kind, scope)
		}
		if _, err := os.Lstat(filepath.Join(op.mod.root, filepath.FromSlash(typesFile))); err == nil {
			return nil, fmt.Errorf("the module already has %s", typesFile)
		}
		if newHub {
			if src, verr = withStorageVersion(src, s.Kind); verr != nil {
				return nil, fmt.Errorf("the new version's types: %w", verr)
			}
		}
		p.files[typesFile] = src
		if err := p.packageMarkers(op, s, hub, pkgExists); err != nil {
			return nil, err
		}
	}
	if pkgExists {
		if err := p.registerKind(op, s); err != nil {
			return nil, err
		}
	}
	if err == nil && newHub {
		// A new version of a kind, its new hub: the old hub converts to
		// and from it, and is no longer the storage version.
		old, err := op.scaffoldOf(hub)
		if err != nil {
			return nil, err
		}
		d := apiData{scaffold: old, HubVersion: s.Version, HubAlias: s.Alias, HubAPIDir: s.APIDir, HubMethod: upperFirst(s.Version), Fields: fields}
		if err := p.add(op, path.Join(hub.dir, strings.ToLower(s.Kind)+"_conversion.go"), "create_conversion.go.tmpl", d); err != nil {
			return nil, err
		}
		if hub.storage {
			src, err := p.readFile(op, hub.file)
			if err != nil {
				return nil, err
			}
			if p.edits[hub.file], err = withoutStorageVersion(src, s.Kind); err != nil {
				return nil, fmt.Errorf("%s: %w", hub.file, err)
			}
		}
		p.notes = append(p.notes, fmt.Sprintf("%s's hub and storage version is %s now, and %s converts to and from it: apigen create webhook -kind %s -conversion converts between them; the controllers, main.go's informers and operator.CheckServed stay on %s until you move them (docs/new-api.md)", s.Kind, s.Version, hub.dir, s.Kind, hub.version))
		return p, nil
	}
	if err == nil {
		// A new version of a kind: a spoke of the hub, which becomes the
		// storage version if it is not yet.
		d := apiData{scaffold: s, HubVersion: hub.version, HubAlias: hub.groupDir + hub.version, HubAPIDir: hub.dir, HubMethod: upperFirst(hub.version), Fields: fields}
		if err := p.add(op, path.Join(s.APIDir, strings.ToLower(s.Kind)+"_conversion.go"), "create_conversion.go.tmpl", d); err != nil {
			return nil, err
		}
		if !hub.storage {
			if len(versions) > 1 || hub.genclient < 0 {
				return nil, fmt.Errorf("%s needs \"// +kubebuilder:storageversion\" in the markers of its %s type %s (in %s), the hub and storage version, where apigen found no \"// +genclient\" line to add it below: add it, then run apigen create api again", s.Kind, hub.version, s.Kind, hub.file)
			}
			src, err := p.readFile(op, hub.file)
			if err != nil {
				return nil, err
			}
			p.edits[hub.file] = slices.Concat(src[:hub.genclient], []byte(lineEnd(src, hub.genclient)+"// +kubebuilder:storageversion"), src[hub.genclient:])
		}
		if convert, ok := op.conversionWebhookOf(s, hub); ok {
			spoke := kindVersion{groupDir: s.GroupDir, version: s.Version}
			if err := p.insert(op, convert, markVersions, spokeLine(s.Kind, hub.version, spoke.Alias()), [2]string{spoke.Alias(), s.Module + "/" + s.APIDir}); err != nil {
				return nil, err
			}
		} else {
			p.notes = append(p.notes, fmt.Sprintf("%s has %d versions now: apigen create webhook -kind %s -conversion converts between them", s.Kind, len(versions)+1, s.Kind))
		}
		return p, nil
	}
	// A new kind, with a controller.
	for _, k := range op.kinds {
		if k.kind == s.Kind {
			return nil, fmt.Errorf("the operator has a kind %s in the group %s: its controller's files and functions are named after the kind, which must differ", s.Kind, k.group)
		}
	}
	base := strings.ToLower(s.Kind) + "_controller"
	if err := p.add(op, base+".go", "create_controller.go.tmpl", s); err != nil {
		return nil, err
	}
	if err := p.add(op, base+"_test.go", "create_controller_test.go.tmpl", s); err != nil {
		return nil, err
	}
	// The controller's +kubebuilder:rbac markers make the role's rules for
	// the kind only in a package that the line's -rbac-paths read.
	cfg, err := parseConfig(p.genArgs)
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	if cfg.rbacDir != "" {
		if err := p.readRoot(op, "rbac-paths", cfg.rbacPaths); err != nil {
			return nil, err
		}
	}
	wiring := fmt.Sprintf(`%sCtrl, err := new%sController(client, factory.%s().%s().%s(), append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
if err != nil {
	return err
}
controllers = append(controllers, %sCtrl)`, s.Lower, s.Kind, s.GroupMethod, s.VersionMethod, s.ClientPlural, s.Lower)
	if err := p.insert(op, "main.go", markControllers, wiring); err != nil {
		return nil, err
	}
	// The operator checks that the API server serves the group versions
	// of its controllers' kinds before it starts: the new one's joins.
	main, err := p.current(op, "main.go")
	if err != nil {
		return nil, err
	}
	importPath := s.Module + "/" + s.APIDir
	checked, err := checksServed(main, importPath)
	if err != nil {
		return nil, fmt.Errorf("main.go: %w", err)
	}
	if !checked {
		if err := p.insert(op, "main.go", markServed, s.Alias+".SchemeGroupVersion,", [2]string{s.Alias, importPath}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checksServed says whether the Go source src passes the
// SchemeGroupVersion of the package importPath to a CheckServed call.
func checksServed(src []byte, importPath string) (bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return false, err
	}
	names := map[string]bool{} // that src imports importPath as
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == importPath {
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
	}
	checked := false
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !checked
		}
		if fun, ok := call.Fun.(*ast.SelectorExpr); !ok || fun.Sel.Name != "CheckServed" {
			return !checked
		}
		for _, arg := range call.Args {
			if sel, ok := arg.(*ast.SelectorExpr); ok && sel.Sel.Name == "SchemeGroupVersion" {
				if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] {
					checked = true
				}
			}
		}
		return !checked
	})
	return checked, nil
}

// refuseNewHub refuses apigen create api -hub of s where it cannot make
// the new version the hub: for a new kind (exists false), and for a kind
// whose versions other than its hub, or whose conversion webhook, convert
// through the hub, which create does not rewrite.
func (op *operatorDir) refuseNewHub(s *scaffold, versions []kindVersion, hub kindVersion, exists bool) error {
	if !exists {
		return fmt.Errorf("-hub makes a new version of a kind its hub, and the operator has no %s in the group %s: leave -hub out for a new kind; nothing written", s.Kind, s.Group)
	}
	hubName := "Convert" + s.Kind + "To" + upperFirst(hub.version) + " and Convert" + s.Kind + "From" + upperFirst(hub.version)
	if len(versions) > 1 {
		var spokes []string
		for _, v := range versions {
			if v.version != hub.version {
				spokes = append(spokes, v.dir)
			}
		}
		return fmt.Errorf("-hub: %s has %d versions, and the packages of those but the hub %s (%s) convert through it with %s, which create does not rewrite; nothing written. "+
			"To make %s the hub by hand: run apigen create api -api %s without -hub, move \"// +kubebuilder:storageversion\" from %s's type %s to %s's, "+
			"delete %s's %s_conversion.go, and write Convert%sTo%s and Convert%sFrom%s in each other version's package in place of its conversions to %s (docs/new-api.md)",
			s.Kind, len(versions), hub.version, strings.Join(spokes, ", "), hubName,
			s.Version, s.Group+"/"+s.Version+"/"+s.Kind, hub.version, s.Kind, s.Version,
			s.APIDir, strings.ToLower(s.Kind), s.Kind, upperFirst(s.Version), s.Kind, upperFirst(s.Version), hub.version)
	}
	if convert, ok := op.conversionWebhookOf(s, hub); ok {
		return fmt.Errorf("-hub: %s has a conversion webhook (%s) whose versions convert through the hub %s with %s, which create does not rewrite: run apigen create api -api %s without -hub, or delete %s and its test, then run apigen create api -hub and apigen create webhook -kind %s -conversion again; nothing written",
			s.Kind, convert, hub.version, hubName, s.Group+"/"+s.Version+"/"+s.Kind, convert, s.Kind)
	}
	return nil
}

// conversionWebhookOf returns the module root's file of s's kind's
// conversion webhook as create webhook -conversion writes it,
// <kind>_conversion_webhook.go, and whether there is one: the file
// counts only where it imports the package of hub, the kind's hub, so
// that a kind of the same name in another group is not taken for it.
func (op *operatorDir) conversionWebhookOf(s *scaffold, hub kindVersion) (string, bool) {
	rel := strings.ToLower(s.Kind) + "_conversion_webhook.go"
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(op.mod.root, rel), nil, parser.ImportsOnly|parser.SkipObjectResolution)
	if err != nil {
		return rel, false
	}
	hubPath := strconv.Quote(s.Module + "/" + hub.dir)
	for _, imp := range f.Imports {
		if imp.Path.Value == hubPath {
			return rel, true
		}
	}
	return rel, false
}

// kindMarkers returns the lines of the comments above the type kind of
// the Go file src (its doc comment and markers), with src's positions.
func kindMarkers(src []byte, kind string) (*token.FileSet, []*ast.Comment, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE || len(g.Specs) != 1 || g.Specs[0].(*ast.TypeSpec).Name.Name != kind {
			continue
		}
		var lines []*ast.Comment
		for _, c := range typeComments(fset, f, g) {
			lines = append(lines, c.List...)
		}
		return fset, lines, nil
	}
	return nil, nil, fmt.Errorf("no type %s", kind)
}

// withStorageVersion returns src, a Go file, with "//
// +kubebuilder:storageversion" below the "// +genclient" line of the
// markers of its type kind.
func withStorageVersion(src []byte, kind string) ([]byte, error) {
	fset, lines, err := kindMarkers(src, kind)
	if err != nil {
		return nil, err
	}
	for _, c := range lines {
		if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) == "+genclient" {
			at := fset.Position(c.End()).Offset
			return slices.Concat(src[:at], []byte(lineEnd(src, at)+"// +kubebuilder:storageversion"), src[at:]), nil
		}
	}
	return nil, fmt.Errorf("no \"// +genclient\" line in the markers of %s to add \"// +kubebuilder:storageversion\" below", kind)
}

// withoutStorageVersion returns src, a Go file, without the
// "// +kubebuilder:storageversion" lines of the markers of its type kind.
func withoutStorageVersion(src []byte, kind string) ([]byte, error) {
	fset, lines, err := kindMarkers(src, kind)
	if err != nil {
		return nil, err
	}
	// The lines are deleted last first, keeping the offsets of the others.
	slices.SortFunc(lines, func(a, b *ast.Comment) int { return cmp.Compare(b.Pos(), a.Pos()) })
	out := slices.Clone(src)
	for _, c := range lines {
		if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) != "+kubebuilder:storageversion" {
			continue
		}
		start, end := fset.Position(c.Pos()).Offset, fset.Position(c.End()).Offset
		start = bytes.LastIndexByte(out[:start], '\n') + 1
		if i := bytes.IndexByte(out[end:], '\n'); i >= 0 {
			end += i + 1
		}
		out = slices.Delete(out, start, end)
	}
	return out, nil
}

// apply writes the plan, generates as generate.go says with the plan's
// arguments, tidies go.mod and builds the packages it wrote to, with
// their tests; a step that fails undoes what the steps before it wrote.
func (p *createPlan) apply(ctx context.Context, op *operatorDir, stdout io.Writer) (err error) {
	root := op.mod.root
	// generate.go's line is written again only for new arguments: the
	// user's spacing and quoting of the same ones stay. It is written where
	// loadOperator found it (a comment may hold the same text before it),
	// and the rest of the file stays as it was read.
	if !slices.Equal(p.genWords, op.genWords) {
		newLine := "//go:generate go tool apigen " + strings.Join(quoteArgs(p.genWords), " ")
		p.read["generate.go"] = op.genSrc
		p.edits["generate.go"] = slices.Concat(op.genSrc[:op.genAt], []byte(newLine), op.genSrc[op.genAt+len(op.genLine):])
	}
	cfg, err := parseConfig(p.genArgs)
	if err != nil {
		return err
	}
	// The plan's writes are of what the module held when create read it:
	// they would write over a change saved since.
	for _, rel := range slices.Concat(slices.Sorted(maps.Keys(p.edits)), slices.Sorted(maps.Keys(p.files))) {
		if err := p.changedSincePlanned(root, rel); err != nil {
			return fmt.Errorf("%w: nothing written; run apigen create again", err)
		}
	}
	j := newJournal()
	defer func() {
		if err == nil {
			j.keep()
			return
		}
		if uerr := j.undo(); uerr != nil {
			err = fmt.Errorf("%w\n(and undoing what create wrote: %w)", err, uerr)
		} else {
			err = fmt.Errorf("%w\n(create undid what it wrote: the module is as it was)", err)
		}
	}()
	// go mod tidy writes go.mod and go.sum; in a workspace, the go
	// commands (the loads of the generators, the build) may write the
	// workspace's checksums, which the go command keeps beside its go.work
	// file, named as it is with ".sum" added (go.work.sum; dev.work.sum
	// for GOWORK=dev.work).
	gowork, err := goWorkFile(ctx, root)
	if err != nil {
		return err
	}
	written := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	if gowork != "" {
		written = append(written, gowork+".sum")
	}
	for _, f := range written {
		if _, err := journalReplacing(j, f); err != nil {
			return err
		}
	}
	// Until go mod tidy runs, go.mod and go.sum are the user's: a change
	// saved to them meanwhile is left alone by an undo.
	for _, f := range written[:2] {
		if err := journalLeft(j, f); err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.edits)) {
		f := filepath.Join(root, filepath.FromSlash(rel))
		// The user's file, edited with its mode: a temporary beside it,
		// renamed over it, so that a failed write leaves it whole. Only
		// the journal's record of it undoes the edit (writing it back).
		// It is checked again right before the write, for a change saved
		// since the check above (while go env GOWORK ran), and recorded
		// only then: a record of what it held before a change refused
		// here would have the undo write over the change.
		temps.locked(func() {
			var mode fs.FileMode
			if err = p.changedSincePlanned(root, rel); err != nil {
				err = fmt.Errorf("%w: run apigen create again", err)
			} else if mode, err = journalReplacingLocked(j, f); err == nil {
				if err = putFileLocked(f, p.edits[rel], mode); err == nil {
					j.wroteLocked(f, p.edits[rel])
				}
			}
		})
		if err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.files)) {
		f := filepath.Join(root, filepath.FromSlash(rel))
		if err := j.mkdirAll(filepath.Dir(f)); err != nil {
			return err
		}
		// A new file whose write fails leaves no part of it behind; one
		// of its name saved since the check above is not written over.
		temps.locked(func() {
			if err = p.changedSincePlanned(root, rel); err != nil {
				err = fmt.Errorf("%w: run apigen create again", err)
			} else if err = putFileLocked(f, p.files[rel], 0o644); err == nil {
				j.creatingLocked(f)
				j.wroteLocked(f, p.files[rel])
			}
		})
		if err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.files)) {
		_, _ = fmt.Fprintf(stdout, "apigen create: wrote %s\n", rel)
	}
	for _, rel := range slices.Sorted(maps.Keys(p.edits)) {
		_, _ = fmt.Fprintf(stdout, "apigen create: added to %s\n", rel)
	}
	cfg.journal = j
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	err = generateAll(ctx, cfg, stdout)
	if cerr := os.Chdir(wd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generating: %w", err)
	}
	// While go mod tidy runs, go.mod and go.sum are its: an undo (a
	// signal's, or tidy's failure's) writes them back whatever they hold.
	// What it left in them is the run's: a later change is the user's.
	for _, f := range written[:2] {
		j.writing(f)
	}
	tidy := command(ctx, "go", "mod", "tidy")
	tidy.Dir = root
	var out bytes.Buffer
	tidy.Stdout, tidy.Stderr = &out, &out
	if err := runCommand(tidy); err != nil {
		return fmt.Errorf("go mod tidy: %w\n%s", err, out.String())
	}
	for _, f := range written[:2] {
		if err := journalLeft(j, f); err != nil {
			return err
		}
	}
	// The packages it wrote to must build, with their tests, or it undoes
	// what it wrote: a copy that compiles in the hub's package may not in
	// the new one, nor a scaffolded test beside the user's kind.
	var pkgs []string
	for _, rel := range slices.Concat(slices.Collect(maps.Keys(p.files)), slices.Collect(maps.Keys(p.edits))) {
		if pkg := "./" + strings.TrimSuffix(path.Dir(rel), "."); strings.HasSuffix(rel, ".go") && !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	if err := buildWithTests(ctx, root, pkgs); err != nil {
		return fmt.Errorf("what it wrote does not build: %w", err)
	}
	_, _ = fmt.Fprintln(stdout, "apigen create: go mod tidy done; go test ./... and go build . work now")
	for _, s := range p.printed {
		_, _ = fmt.Fprint(stdout, "apigen create: "+s)
	}
	for _, n := range p.notes {
		_, _ = fmt.Fprintln(stdout, "apigen create: "+n)
	}
	return nil
}

// changedSincePlanned returns an error if writing the plan's file rel
// would write over a change saved in the module root since the plan was
// made: a new file of the plan that the module now has (a file of that
// name saved meanwhile, or written by another create), or an edit of a
// file that no longer holds what it held when the plan read it.
func (p *createPlan) changedSincePlanned(root, rel string) error {
	f := filepath.Join(root, filepath.FromSlash(rel))
	if _, ok := p.files[rel]; ok {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("the module already has %s, which apigen create was to write (saved meanwhile?)", rel)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	was, ok := p.read[rel]
	if !ok {
		return nil // an edit of a file of the plan's own
	}
	now, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, was) {
		return fmt.Errorf("%s changed while apigen create read the module (saved meanwhile?)", rel)
	}
	return nil
}

// buildWithTests compiles the packages pkgs (patterns relative to root)
// with their tests, and links the test binaries of those that have tests,
// as go test does before it runs them, writing nothing (running no test,
// nor go vet, whose findings in the user's own code are not create's to
// refuse): go test -c -o os.DevNull -vet=off. Its error holds the
// compiler's messages.
func buildWithTests(ctx context.Context, root string, pkgs []string) error {
	if len(pkgs) == 0 {
		return nil
	}
	pkgs = slices.Sorted(slices.Values(pkgs))
	args := append([]string{"test", "-c", "-o", os.DevNull, "-vet=off"}, pkgs...)
	build := command(ctx, "go", args...)
	build.Dir = root
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := runCommand(build); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// journalReplacing records the file p in j before it is replaced: what
// it holds and its mode, which it returns, if it exists, else that p is
// created (with the mode 0644 returned).
func journalReplacing(j *journal, p string) (mode fs.FileMode, err error) {
	temps.locked(func() { mode, err = journalReplacingLocked(j, p) })
	return mode, err
}

// journalReplacingLocked does what journalReplacing does; temps.mu is
// held.
func journalReplacingLocked(j *journal, p string) (fs.FileMode, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		j.creatingLocked(p)
		return 0o644, nil
	}
	if err != nil {
		return 0, err
	}
	info, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	mode := info.Mode().Perm()
	j.replacingLocked(p, ownedFile{data: data, mode: mode})
	return mode, nil
}

// journalLeft records in j what the file p holds now (or that there is
// none) as what the run left in it.
func journalLeft(j *journal, p string) error {
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		j.removed(p)
	case err != nil:
		return err
	default:
		j.wrote(p, data)
	}
	return nil
}

// quoteArgs quotes, as Go strings, the arguments that a go:generate line
// needs quoted: the empty ones and those with spaces or quotes.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\"\\") {
			out[i] = strconv.Quote(a)
		}
	}
	return out
}

// splitGenerate splits the arguments of a go:generate line as go generate
// does: at spaces and tabs, a double-quoted Go string being one argument.
func splitGenerate(line string) ([]string, error) {
	var words []string
	for line = strings.TrimLeft(line, " \t"); line != ""; line = strings.TrimLeft(line, " \t") {
		if line[0] == '"' {
			end := 1
			for end < len(line) && line[end] != '"' {
				if line[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(line) {
				return nil, fmt.Errorf("unterminated quoted string in %q", line)
			}
			word, err := strconv.Unquote(line[:end+1])
			if err != nil {
				return nil, fmt.Errorf("quoted string %s: %w", line[:end+1], err)
			}
			words = append(words, word)
			line = line[end+1:]
			continue
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
	return words, nil
}

// expandGenerate returns the words of generate.go's go:generate line, at
// line number line of the file in the module root, with $NAME and
// ${NAME} expanded as go generate expands them: from its own variables
// (GOFILE, GOPACKAGE, GOLINE, GOARCH, GOOS, GOROOT, DOLLAR, PWD), then
// from the environment.
func expandGenerate(words []string, root string, line int) []string {
	vars := map[string]string{"GOFILE": "generate.go", "GOPACKAGE": "main", "GOLINE": strconv.Itoa(line),
		"GOARCH": build.Default.GOARCH, "GOOS": build.Default.GOOS, "GOROOT": build.Default.GOROOT, "DOLLAR": "$", "PWD": root}
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = os.Expand(w, func(name string) string {
			if v, ok := vars[name]; ok {
				return v
			}
			return os.Getenv(name)
		})
	}
	return out
}

// registerKind plans the registration of the new kind (or version) s in
// its existing API package where the package registers its types itself
// (its code declares SchemeGroupVersion, so register-gen, which registers
// every +genclient type, does not run for it): &Kind{} and &KindList{}
// join the arguments of its one scheme.AddKnownTypes(SchemeGroupVersion,
// ...) call, one a line where they are one a line. A package whose code
// has no such call, or more than one AddKnownTypes call, or has it in a
// file that not every platform builds, is refused, naming what to add.
func (p *createPlan) registerKind(op *operatorDir, s *scaffold) error {
	dir := filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir))
	registers, err := declaresScheme(dir)
	if err != nil {
		return fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
	}
	if !registers {
		return nil
	}
	added := []string{"&" + s.Kind + "{}", "&" + s.Kind + "List{}"}
	refuse := func(why string) error {
		return fmt.Errorf("the API package %s registers its types itself (it declares SchemeGroupVersion, so register-gen does not run for it), and %s: %s must join the types it registers, and apigen adds them only to the arguments of a package's one scheme.AddKnownTypes(SchemeGroupVersion, ...) call, in a file that every platform builds: register the package's types so, then run apigen create api again; nothing written",
			s.APIDir, why, strings.Join(added, " and "))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var calls []*ast.CallExpr
	var rel string // of the file of the last call
	var src []byte
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
			continue
		}
		r := path.Join(s.APIDir, name)
		b, err := p.current(op, r)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, name, b, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
		}
		before := len(calls)
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fun, ok := call.Fun.(*ast.SelectorExpr); ok && fun.Sel.Name == "AddKnownTypes" {
					calls = append(calls, call)
				}
			}
			return true
		})
		if len(calls) == before {
			continue
		}
		rel, src = r, b
		_, everywhere, err := buildsOn(dir, name, b)
		if err != nil {
			return err
		}
		if !everywhere {
			return refuse(fmt.Sprintf("%s, which has build constraints, calls AddKnownTypes", rel))
		}
	}
	if len(calls) != 1 {
		return refuse(fmt.Sprintf("its code calls AddKnownTypes %d times", len(calls)))
	}
	call := calls[0]
	if len(call.Args) == 0 || !isIdent(call.Args[0], "SchemeGroupVersion") || call.Ellipsis.IsValid() {
		return refuse(fmt.Sprintf("the AddKnownTypes call of %s:%d is not scheme.AddKnownTypes(SchemeGroupVersion, &Type{}, ...)", rel, fset.Position(call.Pos()).Line))
	}
	last := call.Args[len(call.Args)-1]
	at := fset.Position(last.End()).Offset
	eol := lineEnd(src, at)
	var insert string
	if fset.Position(call.Rparen).Line == fset.Position(last.End()).Line {
		insert = ", " + strings.Join(added, ", ")
	} else {
		// One a line, below the last argument's line (which ends in its
		// comma), indented as it is, or one more than the call's line
		// where the last argument is on it.
		at += bytes.IndexByte(src[at:], '\n') + 1
		lineStart := bytes.LastIndexByte(src[:fset.Position(last.Pos()).Offset], '\n') + 1
		indent := string(src[lineStart : lineStart+len(src[lineStart:])-len(bytes.TrimLeft(src[lineStart:], " \t"))])
		if fset.Position(last.Pos()).Line == fset.Position(call.Lparen).Line {
			indent += "\t"
		}
		for _, a := range added {
			insert += indent + a + "," + eol
		}
	}
	edited := slices.Concat(src[:at], []byte(insert), src[at:])
	if _, err := parser.ParseFile(token.NewFileSet(), rel, edited, parser.SkipObjectResolution); err != nil {
		return refuse(fmt.Sprintf("adding to its AddKnownTypes call in %s does not parse (%v)", rel, err))
	}
	p.edits[rel] = edited
	return nil
}

// lineEnd returns the line end, "\r\n" or "\n", of the line of src that
// holds the offset at: the end of the lines added below it.
func lineEnd(src []byte, at int) string {
	if i := bytes.IndexByte(src[at:], '\n'); i > 0 && src[at+i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// isIdent says whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// refuseClash returns an error if the new kind of s has a Go type name
// (Kind, KindList, KindSpec, KindStatus) or a plural that an existing
// kind of its group has, or a type name that its API package declares as
// a name of its own (a type, function, variable or constant) or, where
// the package does not declare SchemeGroupVersion itself, that
// register-gen declares in it (Resource, SchemeBuilder, ...).
func (op *operatorDir) refuseClash(s *scaffold) error {
	names := func(kind string) []string {
		return []string{kind, kind + "List", kind + "Spec", kind + "Status"}
	}
	for _, k := range op.kinds {
		if k.group != s.Group {
			continue
		}
		if k.plural == s.Plural {
			return fmt.Errorf("%s's plural %s is the plural of the kind %s (%s): the CRD %s.%s would be both kinds', nothing written", s.Kind, s.Plural, k.kind, k.file, s.Plural, s.Group)
		}
		for _, n := range names(s.Kind) {
			if slices.Contains(names(k.kind), n) {
				return fmt.Errorf("the type %s of the kind %s is a type of the kind %s (%s): choose another kind name, nothing written", n, s.Kind, k.kind, k.file)
			}
		}
	}
	dir := filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir))
	_, err := os.Stat(dir)
	pkgExists := err == nil
	registers := false // the package declares SchemeGroupVersion: no register-gen
	if pkgExists {
		if registers, err = declaresScheme(dir); err != nil {
			return fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
		}
	}
	for _, n := range names(s.Kind) {
		if registerNames[n] && !registers {
			return fmt.Errorf("the type %s of the kind %s is named like the %s that register-gen declares in the API package %s (zz_generated.register.go): choose another kind name, nothing written", n, s.Kind, n, s.APIDir)
		}
	}
	if !pkgExists {
		return nil
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
	}
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			for _, d := range f.Decls {
				var what string
				var declared []string
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						what, declared = "a function", []string{d.Name.Name}
					}
				case *ast.GenDecl:
					what = map[token.Token]string{token.TYPE: "a type", token.VAR: "a variable", token.CONST: "a constant"}[d.Tok]
					declared = specNames(d.Specs...)
				}
				for _, n := range declared {
					if slices.Contains(names(s.Kind), n) {
						return fmt.Errorf("%s declares %s %s, a type of the new kind %s: nothing written", filepath.ToSlash(must(filepath.Rel(op.mod.root, name))), what, n, s.Kind)
					}
				}
			}
		}
	}
	return nil
}

// versionTypes returns the types file of the new version s of a kind whose
// versions and hub are given, and the fields of the kind's type beside its
// TypeMeta and ObjectMeta, which the skeleton conversion carries over. The
// new version starts as the hub is: the hub's type of the kind whole, with
// its markers (resource with plural, scope, short names and categories,
// subresources, printer columns, validation) but those of a version of
// its own (storage, served, deprecated), init's list type, and the types
// and constants of the hub's package that the kind uses, with the methods
// declared on those types (not the generated ones), the constants
// declared with them (an enum's values) and the imports they need; so every version agrees on what the CRD takes from one of them,
// and the skeleton conversion is exact. It copies neither another kind
// (a type with +genclient or a root marker) nor the names register-gen
// declares. Versions whose scopes disagree are refused, as is a new
// package that declares a type, constant, variable or function named
// like one the new version copies unlike the hub's (an identical type
// with identical methods is used as it is), a method or type that uses
// another kind, a method that uses a variable or function of the hub's
// package (but register-gen's), a copy from a file with build
// constraints, and copies that use one package name for two packages.
func (op *operatorDir) versionTypes(ctx context.Context, s *scaffold, versions []kindVersion, hub kindVersion) ([]byte, []string, error) {
	for _, v := range versions {
		if v.nonNamespaced != v.clusterScope || v.clusterScope != hub.clusterScope {
			return nil, nil, fmt.Errorf("the versions of %s disagree on its scope (+genclient:nonNamespaced and +kubebuilder:resource:scope=Cluster go together, in every version; %s of %s has %s): make them agree, then run apigen create api again",
				s.Kind, v.version, v.file, map[bool]string{true: "scope=Cluster", false: "no scope=Cluster"}[v.clusterScope]+" and "+map[bool]string{true: "+genclient:nonNamespaced", false: "no +genclient:nonNamespaced"}[v.nonNamespaced])
		}
	}
	hubDir := filepath.Join(op.mod.root, filepath.FromSlash(hub.dir))
	decls, err := packageDecls(hubDir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the API package %s: %w", hub.dir, err)
	}
	var spec *ast.TypeSpec
	if kind, ok := decls[s.Kind]; ok {
		spec, _ = kind.node.(*ast.TypeSpec)
	}
	if spec == nil {
		return nil, nil, fmt.Errorf("the hub %s of %s has no type %s in its package %s, which the new version copies", hub.version, s.Kind, s.Kind, hub.dir)
	}
	var fields []string
	if st, ok := spec.Type.(*ast.StructType); ok {
		for _, f := range st.Fields.List {
			names := f.Names
			if len(names) == 0 {
				t := f.Type
				if star, ok := t.(*ast.StarExpr); ok {
					t = star.X
				}
				switch t := t.(type) {
				case *ast.Ident:
					names = []*ast.Ident{t}
				case *ast.SelectorExpr:
					names = []*ast.Ident{t.Sel}
				}
			}
			for _, n := range names {
				if ast.IsExported(n.Name) && n.Name != "TypeMeta" && n.Name != "ObjectMeta" {
					fields = append(fields, n.Name)
				}
			}
		}
	}
	// The new version's package, where it exists: it may hold the hub's
	// types already (another kind's new version copied them), the same.
	var target map[string]*apiDecl
	if dir := filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir)); dir != hubDir {
		if _, err := os.Stat(dir); err == nil {
			if target, err = packageDecls(dir); err != nil {
				return nil, nil, fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
			}
		}
	}
	for _, name := range []string{s.Kind, s.Kind + "List"} {
		if d, ok := target[name]; ok {
			return nil, nil, fmt.Errorf("%s declares %s, a type of the new version of %s: nothing written", path.Join(s.APIDir, d.file), name, s.Kind)
		}
	}
	// The kind's type, then the declarations of the hub's package it uses.
	var copied []*apiDecl
	uses := map[*apiDecl][]string{} // the package names each copied declaration uses
	seen := map[*apiDecl]bool{}
	// The other kinds of the hub's package (and their lists), which a
	// new version of this kind never copies: each is a kind of its own,
	// with versions of its own.
	otherKinds := map[string]bool{}
	for _, k := range op.kinds {
		if k.dir == hub.dir && k.kind != s.Kind {
			otherKinds[k.kind], otherKinds[k.kind+"List"] = true, true
		}
	}
	type use struct {
		name string
		by   string // the declaration that uses it, for a refusal
	}
	// The constants declared with each type of the hub's package (the
	// values of an enum: SizeSmall Size = "Small"), in the package's
	// order, which the code written for a version uses with the type
	// though the kind does not: a copy of the type takes them along.
	constsOf := map[string][]*apiDecl{}
	for _, d := range slices.SortedFunc(maps.Values(decls), func(a, b *apiDecl) int { return cmp.Compare(a.node.Pos(), b.node.Pos()) }) {
		for _, t := range constTypes(d) {
			if !slices.Contains(constsOf[t], d) {
				constsOf[t] = append(constsOf[t], d)
			}
		}
	}
	// Why a type is copied, for a refusal of it: its first use (the one
	// the copy follows) is a const block's, which the copy takes whole.
	viaConstBlock := map[string]string{} // a name: the first constant of that block, or "" for another use
	for queue := []use{{name: s.Kind}}; len(queue) > 0; queue = queue[1:] {
		name := queue[0].name
		d, ok := decls[name]
		if !ok || d.value || seen[d] || name == s.Kind+"List" || registerNames[name] {
			continue
		}
		if name != s.Kind && (otherKinds[name] || rootMarkers.MatchString(d.src)) {
			return nil, nil, fmt.Errorf("%s uses %s, another kind of %s's package (%s), which a new version of %s does not copy: make it use none (or move it out of the API package), then run apigen create api again; nothing written",
				queue[0].by, name, hub.version, path.Join(hub.dir, d.file), s.Kind)
		}
		if d.constrained {
			return nil, nil, fmt.Errorf("%s declares %s, which the new version of %s copies, in a file with build constraints, which a new version's types.go does not have: move it to a file without them, then run apigen create api again; nothing written",
				path.Join(hub.dir, d.file), name, s.Kind)
		}
		seen[d] = true
		there := false
		for _, n := range d.names {
			if t, ok := target[n]; ok {
				if normalDecl(t.src) != normalDecl(d.src) {
					return nil, nil, fmt.Errorf("%s declares %s, which the new version of %s copies from %s (%s), unlike it: make the two the same or rename one, then run apigen create api again; nothing written", path.Join(s.APIDir, t.file), n, s.Kind, hub.version, path.Join(hub.dir, d.file))
				}
				if !slices.Equal(normalMethods(t.methods), normalMethods(d.methods)) {
					return nil, nil, fmt.Errorf("%s declares %s as %s (%s) does, with methods unlike its methods, which the new version of %s copies: make the methods the same or rename one type, then run apigen create api again; nothing written", path.Join(s.APIDir, t.file), n, hub.version, path.Join(hub.dir, d.file), s.Kind)
				}
				there = true
			}
		}
		if !there {
			copied = append(copied, d)
		}
		by := path.Join(hub.dir, d.file) + "'s " + d.names[0]
		block := ""
		if gd, ok := d.node.(*ast.GenDecl); ok && gd.Tok == token.CONST && len(gd.Specs) > 1 {
			block = d.names[0]
		}
		declUses(d.node, func(n string) {
			if _, ok := viaConstBlock[n]; !ok {
				viaConstBlock[n] = block // the first use is the one the copy follows
			}
			queue = append(queue, use{n, by})
		}, func(pkg string) {
			if !there && !slices.Contains(uses[d], pkg) {
				uses[d] = append(uses[d], pkg)
			}
		})
		if _, ok := d.node.(*ast.TypeSpec); ok {
			for _, c := range constsOf[name] {
				queue = append(queue, use{c.names[0], by})
			}
		}
		if there || name == s.Kind+"List" {
			continue
		}
		// Its methods (hand-written deep copies, JSON forms, ...), which
		// the copy needs as much as its fields: with the declarations and
		// imports they use; one that uses a variable or function of the
		// hub's package, which the new version does not copy, is refused.
		for _, m := range d.methods {
			if m.constrained {
				return nil, nil, fmt.Errorf("%s declares the method %s.%s, which the new version of %s copies, in a file with build constraints, which a new version's types.go does not have: move it to a file without them, then run apigen create api again; nothing written",
					path.Join(hub.dir, m.file), d.names[0], m.names[0], s.Kind)
			}
			var refused error
			by := path.Join(hub.dir, m.file) + "'s method " + d.names[0] + "." + m.names[0]
			methodUses(m.node.(*ast.FuncDecl), decls, func(n string) {
				u := decls[n]
				switch {
				case u == nil || !u.value:
					if _, ok := viaConstBlock[n]; !ok {
						viaConstBlock[n] = ""
					}
					queue = append(queue, use{n, by})
				case !registerNames[n] && refused == nil:
					why := ""
					if c := viaConstBlock[name]; c != "" {
						why = fmt.Sprintf(" (%s is copied because it is declared in the const block of %s, which the copy takes whole: declaring its constants in a block of their own leaves it out)", name, c)
					}
					refused = fmt.Errorf("%s uses %s, a %s of %s's package that a new version does not copy%s: make the method use none (or declare it in a file of its own in %s after the new version is made), then run apigen create api again; nothing written",
						by, n, map[bool]string{true: "function", false: "variable"}[isFunc(u)], hub.version, why, s.APIDir)
				}
			}, func(pkg string) {
				if !slices.Contains(uses[m], pkg) {
					uses[m] = append(uses[m], pkg)
				}
			})
			if refused != nil {
				return nil, nil, refused
			}
			copied = append(copied, m)
		}
	}
	// init's template gives the package clause, the import of metav1 and
	// the list type.
	src, err := render("types.go.tmpl", s)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := packageDeclsOf(token.NewFileSet(), map[string][]byte{"types.go": src})
	if err != nil {
		return nil, nil, err
	}
	header := string(src[:tmpl[s.Kind].start])
	var b strings.Builder
	b.WriteString(header)
	for i, d := range withConstsAfterTypes(copied, constsOf) {
		text := d.src
		if i == 0 {
			text = withoutVersionMarkers(text)
		}
		b.WriteString(text + "\n\n")
		if i == 0 {
			b.WriteString(tmpl[s.Kind+"List"].src + "\n\n")
		}
	}
	text := b.String()
	nfset := token.NewFileSet()
	nf, err := parser.ParseFile(nfset, "types.go", text, parser.ParseComments)
	if err != nil {
		return nil, nil, fmt.Errorf("the new version's types, with the hub's: %w", err)
	}
	names := map[*ast.File]map[string]string{} // package names by import path, asked of go list where a file's imports do not say
	imported := map[string]string{}            // import paths by the package name the copies use
	for _, imp := range nf.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && imp.Name != nil {
			imported[imp.Name.Name] = p
		}
	}
	for _, d := range copied {
		for _, pkg := range uses[d] {
			imp, err := importOf(d.ast, pkg, func() (map[string]string, error) {
				if names[d.ast] == nil {
					known, err := packageNames(ctx, op.mod.root, d.ast)
					if err != nil {
						return nil, err
					}
					names[d.ast] = known
				}
				return names[d.ast], nil
			})
			if err != nil {
				return nil, nil, fmt.Errorf("%s's %s: %w", path.Join(hub.dir, d.file), d.names[0], err)
			}
			if imp != [2]string{} {
				if p, ok := imported[pkg]; ok && p != imp[1] {
					return nil, nil, fmt.Errorf("%s's %s uses %s as the package %s, which another declaration that the new version of %s copies uses as %s: import one of them under another name in %s, then run apigen create api again; nothing written",
						path.Join(hub.dir, d.file), d.names[0], pkg, imp[1], s.Kind, p, hub.dir)
				}
				imported[pkg] = imp[1]
				astutil.AddNamedImport(nfset, nf, imp[0], imp[1])
			}
		}
	}
	var out bytes.Buffer
	if err := format.Node(&out, nfset, nf); err != nil {
		return nil, nil, err
	}
	formatted, err := format.Source(out.Bytes())
	return formatted, fields, err
}

// withConstsAfterTypes returns the declarations copied in their order,
// but each declaration of constants of constsOf (by the name of the type
// they are declared with) that is copied comes right after the first
// copied type it is declared with (before its methods), as the user
// writes an enum's values after its type.
func withConstsAfterTypes(copied []*apiDecl, constsOf map[string][]*apiDecl) []*apiDecl {
	after := map[*apiDecl][]*apiDecl{} // by the type they come after
	moved := map[*apiDecl]bool{}
	for _, d := range copied {
		if _, ok := d.node.(*ast.TypeSpec); !ok {
			continue
		}
		for _, c := range constsOf[d.names[0]] {
			if !moved[c] && slices.Contains(copied, c) {
				after[d] = append(after[d], c)
				moved[c] = true
			}
		}
	}
	out := make([]*apiDecl, 0, len(copied))
	for _, d := range copied {
		if !moved[d] {
			out = append(out, d)
			out = append(out, after[d]...)
		}
	}
	return out
}

// packageMarkers plans the CRD markers of the hub's package (such as
// +kubebuilder:validation:Optional, which makes every field optional that
// is not marked +required) in the new version's package s: in its doc.go
// where the package is new, below +groupName; where it exists, its
// markers must be the hub's, or the new version is refused.
func (p *createPlan) packageMarkers(op *operatorDir, s *scaffold, hub kindVersion, pkgExists bool) error {
	want, err := crdPackageMarkers(filepath.Join(op.mod.root, filepath.FromSlash(hub.dir)))
	if err != nil {
		return fmt.Errorf("reading the API package %s: %w", hub.dir, err)
	}
	if pkgExists {
		have, err := crdPackageMarkers(filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir)))
		if err != nil {
			return fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
		}
		if !slices.Equal(have, want) {
			list := func(ms []string) string {
				if len(ms) == 0 {
					return "none"
				}
				return strings.Join(ms, ", ")
			}
			return fmt.Errorf("the package %s has the package markers %s, %s of %s (%s) has %s: the new version's schema would differ from the hub's; make them the same, then run apigen create api again; nothing written",
				s.APIDir, list(have), hub.version, s.Kind, hub.dir, list(want))
		}
		return nil
	}
	doc := path.Join(s.APIDir, "doc.go")
	src, ok := p.files[doc]
	if !ok || len(want) == 0 {
		return nil
	}
	group := "// +groupName=" + s.Group + "\n"
	i := bytes.Index(src, []byte(group))
	if i < 0 {
		return fmt.Errorf("%s: no %q line to add the package markers of %s below", doc, strings.TrimSpace(group), hub.dir)
	}
	i += len(group)
	p.files[doc] = slices.Concat(src[:i], []byte("// "+strings.Join(want, "\n// ")+"\n"), src[i:])
	return nil
}

// crdPackageMarkers returns the +kubebuilder markers of the Go package in
// dir (in the comments above a package clause, where controller-gen reads
// them), but those about a version alone, sorted, without duplicates and
// without the leading "//".
func crdPackageMarkers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, cg := range f.Comments {
			if cg.End() > f.Package {
				break
			}
			for _, c := range cg.List {
				text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
				if strings.HasPrefix(text, "+kubebuilder:") && !versionMarkers.MatchString("// "+text+"\n") && !slices.Contains(out, text) {
					out = append(out, text)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// versionMarkers are the markers of a kind's type that are about its
// version alone, which a new version does not copy.
var versionMarkers = regexp.MustCompile(`(?m)^[ \t]*//[ \t]*\+kubebuilder:(storageversion|deprecatedversion|unservedversion|skipversion)\b.*\n`)

// withoutVersionMarkers returns src without its versionMarkers.
func withoutVersionMarkers(src string) string {
	return versionMarkers.ReplaceAllString(src, "")
}

// apiDecl is a declaration of an API package that a new version of a kind
// may copy: a type with its methods, or constants; or one it does not
// copy but whose name it must know: a variable or a function.
type apiDecl struct {
	names   []string
	node    ast.Node   // the TypeSpec, or the ValueSpec or GenDecl of constants or variables, or the FuncDecl
	src     string     // the declaration alone, with its comments (its doc and markers), as Go source
	start   int        // the offset in its file of where src starts, for a declaration not in a group
	file    string     // its file, slash-separated, in the package's directory
	ast     *ast.File  // its file
	value   bool       // a variable or a function (not a method), which a new version does not copy
	methods []*apiDecl // of a type: the methods declared on it, in the order of the package's files
	// constrained: its file has build constraints (a //go:build line or
	// a _GOOS or _GOARCH name) that some platform does not meet, where a
	// twin for the other platforms may be declared.
	constrained bool
}

// packageDecls returns the type and constant declarations of the Go
// package in dir, without its tests, its generated files and the files
// that this platform does not build, by each name they declare.
func packageDecls(dir string) (map[string]*apiDecl, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	constrained := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		here, everywhere, err := buildsOn(dir, n, b)
		if err != nil {
			return nil, err
		}
		if here {
			files[n], constrained[n] = b, !everywhere
		}
	}
	decls, err := packageDeclsOf(token.NewFileSet(), files)
	if err != nil {
		return nil, err
	}
	for _, d := range decls {
		d.constrained = constrained[d.file]
		for _, m := range d.methods {
			m.constrained = constrained[m.file]
		}
	}
	return decls, nil
}

// platforms are the platforms a file is built on, for buildsOn: a file of
// an API package that one of them does not build has build constraints.
var platforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"freebsd", "386"}, {"plan9", "arm"}}

// buildsOn says whether the Go file name of dir, of source src, is built
// on this platform (here), and on every platform (everywhere).
func buildsOn(dir, name string, src []byte) (here, everywhere bool, err error) {
	match := func(ctx build.Context) (bool, error) {
		ctx.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(src)), nil }
		return ctx.MatchFile(dir, name)
	}
	if here, err = match(build.Default); err != nil {
		return false, false, fmt.Errorf("%s: %w", name, err)
	}
	everywhere = true
	for _, p := range platforms {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH = p[0], p[1]
		ok, err := match(ctx)
		if err != nil {
			return false, false, fmt.Errorf("%s: %w", name, err)
		}
		everywhere = everywhere && ok
	}
	return here, everywhere, nil
}

// packageDeclsOf is packageDecls of the files given by name. A
// declaration in a group, type (A string; B string), is one of its own,
// with the comments above it in the group; but a group of constants is
// one declaration, whole, with its doc comment, as the user wrote it (an
// enum's values; constants whose values depend on their order, iota or
// a value left out, cannot be apart), unless it declares one of the
// registerNames, which a new version never copies.
// Variables and functions are declarations too (value), methods are those
// of their receiver's type, not declarations of their own.
func packageDeclsOf(fset *token.FileSet, files map[string][]byte) (map[string]*apiDecl, error) {
	decls := map[string]*apiDecl{}
	methods := map[string][]*apiDecl{} // by the name of their receiver's type
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		f, err := parser.ParseFile(fset, name, b, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" || strings.HasSuffix(f.Name.Name, "_test") {
			continue
		}
		off := func(p token.Pos) int { return fset.Position(p).Offset }
		add := func(d *apiDecl) {
			d.file, d.ast = name, f
			for _, n := range d.names {
				decls[n] = d
			}
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				start := fd.Pos()
				if fd.Doc != nil {
					start = fd.Doc.Pos()
				}
				d := &apiDecl{node: fd, names: []string{fd.Name.Name}, src: string(b[off(start):off(fd.End())]), start: off(start)}
				if fd.Recv == nil {
					if fd.Name.Name != "init" && fd.Name.Name != "_" {
						d.value = true
						add(d)
					}
					continue
				}
				if len(fd.Recv.List) == 1 {
					if recv := receiverType(fd.Recv.List[0].Type); recv != "" {
						d.file, d.ast = name, f
						methods[recv] = append(methods[recv], d)
					}
				}
				continue
			}
			g, ok := decl.(*ast.GenDecl)
			if !ok || (g.Tok != token.TYPE && g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			if !g.Lparen.IsValid() || (g.Tok == token.CONST && (ordered(g) || !slices.ContainsFunc(specNames(g.Specs...), func(n string) bool { return registerNames[n] }))) {
				start := g.Pos()
				if cs := typeComments(fset, f, g); len(cs) > 0 {
					start = cs[len(cs)-1].Pos()
				}
				d := &apiDecl{node: g, src: string(b[off(start):off(g.End())]), start: off(start)}
				if len(g.Specs) == 1 {
					if t, ok := g.Specs[0].(*ast.TypeSpec); ok {
						d.node = t
					}
				}
				d.names = specNames(g.Specs...)
				d.value = g.Tok == token.VAR
				add(d)
				continue
			}
			after := g.Lparen
			for _, spec := range g.Specs {
				start := spec.Pos()
				if cs := commentsAbove(fset, f, spec.Pos(), after); len(cs) > 0 {
					start = cs[len(cs)-1].Pos()
				}
				add(&apiDecl{node: spec, names: specNames(spec), start: -1, value: g.Tok == token.VAR,
					src: string(b[off(start):off(spec.Pos())]) + g.Tok.String() + " " + string(b[off(spec.Pos()):off(spec.End())])})
				after = spec.End()
			}
		}
	}
	for recv, ms := range methods {
		if d, ok := decls[recv]; ok && !d.value {
			if _, ok := d.node.(*ast.TypeSpec); ok {
				d.methods = ms
			}
		}
	}
	return decls, nil
}

// receiverType returns the name of the type of a method's receiver, T of
// T, *T, T[P] or *T[P].
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	switch t := e.(type) {
	case *ast.IndexExpr:
		e = t.X
	case *ast.IndexListExpr:
		e = t.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// specNames returns the names that specs declare.
func specNames(specs ...ast.Spec) []string {
	var out []string
	for _, s := range specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			out = append(out, s.Name.Name)
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.Name != "_" {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

// constTypes returns the names of the types that the constants d
// declares are declared with (SizeSmall Size = "Small": Size), none if
// d declares no constants.
func constTypes(d *apiDecl) []string {
	var specs []ast.Spec
	switch n := d.node.(type) {
	case *ast.ValueSpec:
		if !d.value {
			specs = []ast.Spec{n}
		}
	case *ast.GenDecl:
		if n.Tok == token.CONST {
			specs = n.Specs
		}
	}
	var out []string
	for _, spec := range specs {
		if t, ok := spec.(*ast.ValueSpec).Type.(*ast.Ident); ok && !slices.Contains(out, t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// ordered says whether the constants of g depend on their order: a
// value left out (the one above repeated) or iota.
func ordered(g *ast.GenDecl) bool {
	for _, s := range g.Specs {
		v := s.(*ast.ValueSpec)
		if len(v.Values) == 0 {
			return true
		}
		for _, e := range v.Values {
			iota := false
			ast.Inspect(e, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
					iota = true
				}
				return !iota
			})
			if iota {
				return true
			}
		}
	}
	return false
}

// declUses calls name with each name that n uses unqualified, but the
// names it declares and the names of its fields, and pkg with each name
// it qualifies with a package name.
func declUses(n ast.Node, name, pkg func(string)) {
	var walk func(ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			for _, s := range n.Specs {
				ast.Inspect(s, walk)
			}
			return false
		case *ast.TypeSpec:
			if n.TypeParams != nil {
				ast.Inspect(n.TypeParams, walk)
			}
			ast.Inspect(n.Type, walk)
			return false
		case *ast.ValueSpec:
			if n.Type != nil {
				ast.Inspect(n.Type, walk)
			}
			for _, v := range n.Values {
				ast.Inspect(v, walk)
			}
			return false
		case *ast.Field:
			ast.Inspect(n.Type, walk)
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				pkg(x.Name)
				return false
			}
		case *ast.Ident:
			name(n.Name)
		}
		return true
	}
	ast.Inspect(n, walk)
}

// registerNames are the names that register-gen declares in an API
// package that does not declare SchemeGroupVersion itself, as a new
// version's does not: a method may use them, and a new version never
// copies them from a hub that declares them itself (its generated
// register declares them).
var registerNames = map[string]bool{
	"GroupName": true, "GroupVersion": true, "SchemeGroupVersion": true, "Resource": true,
	"SchemeBuilder": true, "localSchemeBuilder": true, "AddToScheme": true, "Install": true, "addKnownTypes": true,
}

// rootMarkers match the markers of a kind's type or its list's: a type
// with one is a kind of its own, which a new version of another kind
// does not copy.
var rootMarkers = regexp.MustCompile(`(?m)^[ \t]*//[ \t]*\+(genclient|kubebuilder:object:root=true)\b`)

// normalMethods returns the sources of methods as they compare, sorted.
func normalMethods(methods []*apiDecl) []string {
	out := make([]string, 0, len(methods))
	for _, m := range methods {
		out = append(out, normalDecl(m.src))
	}
	slices.Sort(out)
	return out
}

// isFunc says whether d is a function.
func isFunc(d *apiDecl) bool {
	_, ok := d.node.(*ast.FuncDecl)
	return ok
}

// methodUses calls name with each name that the method fd uses
// unqualified and does not declare itself, and pkg with each name it
// qualifies with a package name (a name that is neither its own nor one
// of decls, the declarations of its package). The names of fields (of a
// struct type it declares, or keys of a composite literal of a struct
// type) are not names it uses.
func methodUses(fd *ast.FuncDecl, decls map[string]*apiDecl, name, pkg func(string)) {
	local := func(id *ast.Ident) bool {
		if id.Obj == nil {
			return false
		}
		d, ok := id.Obj.Decl.(ast.Node)
		return ok && d.Pos() >= fd.Pos() && d.Pos() < fd.End()
	}
	// elems are the element types of the composite literals whose type
	// is left out (in a literal of a slice, array or map), by literal.
	elems := map[*ast.CompositeLit]ast.Expr{}
	var walk func(ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && !local(x) {
				if _, own := decls[x.Name]; !own {
					pkg(x.Name)
					return false
				}
			}
			ast.Inspect(n.X, walk)
			return false
		case *ast.Field:
			ast.Inspect(n.Type, walk)
			return false
		case *ast.CompositeLit:
			t := n.Type
			if t == nil {
				t = elems[n]
			} else {
				ast.Inspect(n.Type, walk)
			}
			fields, elem := literalOf(t, decls)
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					if lit := elided(e); lit != nil && elem != nil {
						elems[lit] = elem
					}
					ast.Inspect(e, walk)
					continue
				}
				if _, key := kv.Key.(*ast.Ident); !(fields && key) {
					ast.Inspect(kv.Key, walk)
				}
				if lit := elided(kv.Value); lit != nil && elem != nil {
					elems[lit] = elem
				}
				ast.Inspect(kv.Value, walk)
			}
			return false
		case *ast.Ident:
			if !local(n) {
				name(n.Name)
			}
		}
		return true
	}
	if fd.Recv != nil {
		ast.Inspect(fd.Recv, walk)
	}
	ast.Inspect(fd.Type, walk)
	if fd.Body != nil {
		ast.Inspect(fd.Body, walk)
	}
}

// elided returns the composite literal that e is, or &e is, if its type
// is left out.
func elided(e ast.Expr) *ast.CompositeLit {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	if lit, ok := e.(*ast.CompositeLit); ok && lit.Type == nil {
		return lit
	}
	return nil
}

// literalOf says whether the keys of a composite literal of type t are
// field names, and returns the type of its elements where it is a slice,
// array or map type (nil if not known). A type of another package, or
// one not known, is taken as a struct type.
func literalOf(t ast.Expr, decls map[string]*apiDecl) (fields bool, elem ast.Expr) {
	for range 10 { // a chain of named types, not a cycle
		switch tt := t.(type) {
		case *ast.StarExpr:
			t = tt.X
			continue
		case *ast.ParenExpr:
			t = tt.X
			continue
		case *ast.ArrayType:
			return false, tt.Elt
		case *ast.MapType:
			return false, tt.Value
		case *ast.Ident:
			if d, ok := decls[tt.Name]; ok {
				if spec, ok := d.node.(*ast.TypeSpec); ok {
					t = spec.Type
					continue
				}
			}
		}
		return true, nil
	}
	return true, nil
}

// normalDecl is the source of a declaration as its copies compare: its
// code and its markers, formatted, without the prose of its comments.
func normalDecl(src string) string {
	out, err := format.Source([]byte("package p\n\n" + src))
	if err != nil {
		out = []byte(src)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if c, ok := strings.CutPrefix(l, "//"); l == "" || (ok && !strings.HasPrefix(strings.TrimSpace(c), "+")) {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// importOf returns the import of f (name, path; the name empty where f's
// import has none) that gives the package name pkg, or the zero value if
// f imports no package of that name (pkg is a name of f's package, such
// as a constant's). A package imported without a name is matched by the
// last element of its path, or the name goimports assumes for it
// (gopkg.in/yaml.v3 is yaml, example.com/lib/v2 lib); where these match
// no import or several, by the names that names returns.
func importOf(f *ast.File, pkg string, names func() (map[string]string, error)) ([2]string, error) {
	var unnamed, candidates []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if imp.Name != nil {
			if imp.Name.Name == pkg {
				return [2]string{pkg, p}, nil
			}
			continue
		}
		unnamed = append(unnamed, p)
		if path.Base(p) == pkg || assumedName(p) == pkg {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 1 {
		return [2]string{"", candidates[0]}, nil
	}
	if len(unnamed) == 0 {
		return [2]string{}, nil
	}
	known, err := names()
	if err != nil {
		return [2]string{}, fmt.Errorf("finding the package %s among the imports %s: %w", pkg, strings.Join(unnamed, ", "), err)
	}
	for _, p := range unnamed {
		if known[p] == pkg {
			return [2]string{"", p}, nil
		}
	}
	return [2]string{}, nil
}

// assumedName is the package name that goimports assumes for an import
// path: its last element, without a major version element after it, a
// "go-" prefix or what follows the first character that a Go name cannot
// have.
func assumedName(importPath string) string {
	base := path.Base(importPath)
	if v, ok := strings.CutPrefix(base, "v"); ok {
		if _, err := strconv.Atoi(v); err == nil && path.Dir(importPath) != "." {
			base = path.Base(path.Dir(importPath))
		}
	}
	base = strings.TrimPrefix(base, "go-")
	if i := strings.IndexFunc(base, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}); i >= 0 {
		base = base[:i]
	}
	return base
}

// packageNames returns the names of the packages that f imports, by
// import path, as go list finds them in the module at root.
func packageNames(ctx context.Context, root string, f *ast.File) (map[string]string, error) {
	args := []string{"list", "-e", "-f", "{{.ImportPath}} {{.Name}}"}
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil {
			args = append(args, p)
		}
	}
	cmd := command(ctx, "go", args...)
	cmd.Dir = root
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := runCommand(cmd); err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, errOut.String())
	}
	names := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if p, n, ok := strings.Cut(line, " "); ok && n != "" {
			names[p] = n
		}
	}
	return names, nil
}
