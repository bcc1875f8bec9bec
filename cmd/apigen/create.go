package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
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

	"golang.org/x/tools/go/ast/astutil"
)

// The marker comments that init writes into the operator's files, where
// apigen create may add lines to them: above the marker, with its indent.
const (
	markFlags       = "// +apigen:scaffold:flags"
	markControllers = "// +apigen:scaffold:controllers"
	markWebhooks    = "// +apigen:scaffold:webhooks"
	markHandlers    = "// +apigen:scaffold:webhookhandlers"
	markVersions    = "// +apigen:scaffold:versions"
)

// markWhere says where each marker is, for a file that has lost it.
var markWhere = map[string]string{
	markFlags:       "in run, before o.Bind(fs)",
	markControllers: "in runOperator, after the controllers are made, before operator.WithControllers",
	markWebhooks:    "in runOperator, after the options are made, before operator.Run",
	markHandlers:    "in webhookHandlers, in the list of the functions of the webhooks",
	markVersions:    "in the list of the kind's versions",
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
	usage := "usage: apigen create webhook -kind KIND [-group GROUP] [-defaulting] [-validation] [-conversion]\n" +
		"       apigen create api -api GROUP/VERSION/KIND"
	if len(args) == 0 || (args[0] != "webhook" && args[0] != "api") {
		_, _ = fmt.Fprintln(stderr, usage)
		return 2
	}
	what := args[0]
	fs := flag.NewFlagSet("apigen create "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var w webhookRequest
	var api string
	if what == "webhook" {
		fs.StringVar(&w.kind, "kind", "", "The kind of the operator's API that gets the webhooks (required).")
		fs.StringVar(&w.group, "group", "", "The kind's API group, where two groups have a kind of that name.")
		fs.BoolVar(&w.defaulting, "defaulting", false, "A defaulting (mutating) webhook of the kind.")
		fs.BoolVar(&w.validation, "validation", false, "A validating webhook of the kind.")
		fs.BoolVar(&w.conversion, "conversion", false, "A conversion webhook between the kind's versions (needs two: apigen create api adds one).")
	} else {
		fs.StringVar(&api, "api", "", "The new kind, or new version of a kind, GROUP/VERSION/KIND (example.com/v2/Widget) (required).")
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, usage)
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
			plan, err = op.planAPI(api)
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
	genArgs  []string // the arguments of generate.go's go:generate go tool apigen
	genLine  string   // that line, whole
	kinds    []kindVersion
	mainFile string // main.go
}

// kindVersion is a kind at one version of the operator's API packages.
type kindVersion struct {
	group, groupDir, version, kind, plural string
	dir                                    string // apis/<group dir>/<version>, slash-separated
	file                                   string // of the type, slash-separated
	storage                                bool   // +kubebuilder:storageversion
	nonNamespaced, clusterScope            bool   // +genclient:nonNamespaced, +kubebuilder:resource:scope=Cluster
	genclient                              int    // offset of the end of its "// +genclient" line in file, or -1
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
	lines := generateLine.FindAllString(string(gen), -1)
	if len(lines) != 1 {
		return nil, notInit
	}
	op.genLine = lines[0]
	op.genArgs, err = splitGenerate(strings.TrimPrefix(lines[0], "//go:generate go tool apigen"))
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	cfg, err := parseConfig(op.genArgs)
	if err != nil {
		return nil, fmt.Errorf("generate.go's go:generate line: %w", err)
	}
	if cfg.rbacRole == "" {
		return nil, notInit
	}
	op.name = cfg.rbacRole
	if cfg.out == "" || cfg.crdDir == "" || cfg.apis != "apis" {
		return nil, fmt.Errorf("the operator %s has no API of its own (apigen init without -api, which reconciles ConfigMaps): create adds to the API packages under apis that init -api makes", op.name)
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
			group := ""
			for _, f := range pkg.Files {
				for _, c := range f.Comments {
					for _, line := range strings.Split(c.Text(), "\n") {
						if g, ok := strings.CutPrefix(strings.TrimSpace(line), "+groupName="); ok {
							group = g
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
					k := kindVersion{group: group, version: filepath.Base(dir), kind: spec.Name.Name, dir: rel, genclient: -1,
						file: filepath.ToSlash(must(filepath.Rel(root, name)))}
					k.groupDir, _, _ = strings.Cut(group, ".")
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
	var out []*ast.CommentGroup
	line := fset.Position(decl.Pos()).Line
	for _, c := range slices.Backward(f.Comments) {
		if c.End() >= decl.Pos() {
			continue
		}
		if fset.Position(c.End()).Line < line-2 || len(out) == 2 {
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
	printed  []string          // the lines the user adds, where a file has no marker
	genArgs  []string          // generate.go's arguments after the change
	doneNote string
}

func newPlan(op *operatorDir) *createPlan {
	return &createPlan{files: map[string][]byte{}, edits: map[string][]byte{}, genArgs: slices.Clone(op.genArgs)}
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
	return os.ReadFile(filepath.Join(op.mod.root, filepath.FromSlash(rel)))
}

// insert plans lines above the marker line of rel, with its indent, and
// imports (name path pairs, name empty for the default) into rel; without
// the marker, it plans printing them instead and leaves rel as it is.
func (p *createPlan) insert(op *operatorDir, rel, marker, lines string, imports ...[2]string) error {
	src, err := p.current(op, rel)
	if err != nil {
		return err
	}
	text := string(src)
	at := -1
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text) - off
		}
		if strings.HasPrefix(strings.TrimSpace(text[off:off+end]), marker) {
			at = off
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
	indent := text[at : at+len(text[at:])-len(strings.TrimLeft(text[at:], " \t"))]
	var b strings.Builder
	for _, l := range strings.Split(strings.Trim(lines, "\n"), "\n") {
		b.WriteString(indent + strings.TrimLeft(l, " \t") + "\n")
	}
	text = text[:at] + b.String() + text[at:]
	if len(imports) > 0 {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, text, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, imp := range imports {
			astutil.AddNamedImport(fset, f, imp[0], imp[1])
		}
		var out bytes.Buffer
		if err := format.Node(&out, fset, f); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		text = out.String()
	}
	formatted, err := format.Source([]byte(text))
	if err != nil {
		return fmt.Errorf("%s after adding to it: %w", rel, err)
	}
	p.edits[rel] = formatted
	return nil
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

// scaffoldOf returns the scaffold data of the kind k of the operator.
func (op *operatorDir) scaffoldOf(k kindVersion) (*scaffold, error) {
	s := &scaffold{Name: op.name}
	if err := s.complete(k.group + "/" + k.version + "/" + k.kind); err != nil {
		return nil, err
	}
	s.Module, s.Plural = op.mod.path, k.plural
	return s, nil
}

// planWebhooks plans apigen create webhook.
func (op *operatorDir) planWebhooks(w webhookRequest) (*createPlan, error) {
	if w.kind == "" {
		return nil, errors.New("-kind is required: the kind that gets the webhooks")
	}
	if !w.defaulting && !w.validation && !w.conversion {
		return nil, errors.New("no webhook asked for: give -defaulting, -validation or -conversion, or several")
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
	p := newPlan(op)
	var funcs []string
	for _, t := range []struct {
		on        bool
		typ, name string
	}{{w.defaulting, "default", "defaulting"}, {w.validation, "validate", "validation"}, {w.conversion, "convert", "conversion"}} {
		if !t.on {
			continue
		}
		webhookPath := "/" + t.typ + "-" + s.Lower
		if regexp.MustCompile(`path=` + regexp.QuoteMeta(webhookPath) + `(,|\s|$)`).Match(mainSrc.Bytes()) {
			return nil, fmt.Errorf("%s has a %s webhook already (a marker of path %s in the operator's package): nothing written", w.kind, t.name, webhookPath)
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
	if !slices.Contains(p.genArgs, "-webhook") {
		p.genArgs = append(p.genArgs, "-webhook", "deploy", "-webhook-paths", ".")
	}
	return p, nil
}

// apiData is what the templates of a new kind or version are executed with.
type apiData struct {
	*scaffold
	HubVersion, HubAlias, HubAPIDir, HubMethod string
}

// planAPI plans apigen create api.
func (op *operatorDir) planAPI(api string) (*createPlan, error) {
	if api == "" {
		return nil, errors.New("-api is required: GROUP/VERSION/KIND, such as example.com/v2/Widget")
	}
	s := &scaffold{Name: op.name}
	if err := s.complete(api); err != nil {
		return nil, err
	}
	s.Module = op.mod.path
	pkgKinds := 0
	for _, k := range op.kinds {
		switch {
		case k.group == s.Group && k.version == s.Version && k.kind == s.Kind:
			return nil, fmt.Errorf("the operator's API has %s already (%s): nothing written", api, k.file)
		case k.groupDir == s.GroupDir && k.group != s.Group:
			return nil, fmt.Errorf("the group %s has its packages in apis/%s, which %s's are in: choose a group whose first label is another word", s.Group, s.GroupDir, k.group)
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
	if err != nil {
		if err := op.refuseClash(s); err != nil {
			return nil, err
		}
		if err := p.add(op, typesFile, "types.go.tmpl", s); err != nil {
			return nil, err
		}
	} else {
		src, err := op.versionTypes(s, versions, hub)
		if err != nil {
			return nil, err
		}
		if _, err := os.Lstat(filepath.Join(op.mod.root, filepath.FromSlash(typesFile))); err == nil {
			return nil, fmt.Errorf("the module already has %s", typesFile)
		}
		p.files[typesFile] = src
	}
	if err == nil {
		// A new version of a kind: a spoke of the hub, which becomes the
		// storage version if it is not yet.
		d := apiData{scaffold: s, HubVersion: hub.version, HubAlias: hub.groupDir + hub.version, HubAPIDir: hub.dir, HubMethod: upperFirst(hub.version)}
		if err := p.add(op, path.Join(s.APIDir, strings.ToLower(s.Kind)+"_conversion.go"), "create_conversion.go.tmpl", d); err != nil {
			return nil, err
		}
		if !hub.storage {
			if len(versions) > 1 || hub.genclient < 0 {
				return nil, fmt.Errorf("%s needs \"// +kubebuilder:storageversion\" in the markers of its %s type %s (in %s), the hub and storage version, where apigen found no \"// +genclient\" line to add it below: add it, then run apigen create api again", s.Kind, hub.version, s.Kind, hub.file)
			}
			src, err := os.ReadFile(filepath.Join(op.mod.root, filepath.FromSlash(hub.file)))
			if err != nil {
				return nil, err
			}
			p.edits[hub.file] = slices.Concat(src[:hub.genclient], []byte("\n// +kubebuilder:storageversion"), src[hub.genclient:])
		}
		convert := strings.ToLower(s.Kind) + "_conversion_webhook.go"
		if _, err := os.Stat(filepath.Join(op.mod.root, convert)); err == nil {
			spoke := kindVersion{groupDir: s.GroupDir, version: s.Version}
			if err := p.insert(op, convert, markVersions, spokeLine(s.Kind, hub.version, spoke.Alias()), [2]string{spoke.Alias(), s.Module + "/" + s.APIDir}); err != nil {
				return nil, err
			}
		} else {
			p.doneNote = fmt.Sprintf("%s has %d versions now: apigen create webhook -kind %s -conversion converts between them", s.Kind, len(versions)+1, s.Kind)
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
	wiring := fmt.Sprintf(`%sCtrl, err := new%sController(client, factory.%s().%s().%s(), append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
if err != nil {
	return err
}
controllers = append(controllers, %sCtrl)`, s.Lower, s.Kind, s.GroupMethod, s.VersionMethod, s.ClientPlural, s.Lower)
	if err := p.insert(op, "main.go", markControllers, wiring); err != nil {
		return nil, err
	}
	return p, nil
}

// apply writes the plan, generates as generate.go says with the plan's
// arguments and tidies go.mod; a step that fails undoes what the steps
// before it wrote.
func (p *createPlan) apply(ctx context.Context, op *operatorDir, stdout io.Writer) (err error) {
	root := op.mod.root
	genArgs := strings.Join(quoteArgs(p.genArgs), " ")
	newLine := "//go:generate go tool apigen " + genArgs
	if newLine != op.genLine {
		src, err := os.ReadFile(filepath.Join(root, "generate.go"))
		if err != nil {
			return err
		}
		p.edits["generate.go"] = bytes.Replace(src, []byte(op.genLine), []byte(newLine), 1)
	}
	cfg, err := parseConfig(p.genArgs)
	if err != nil {
		return err
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
	for _, name := range []string{"go.mod", "go.sum"} {
		if err := journalReplacing(j, filepath.Join(root, name)); err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.edits)) {
		f := filepath.Join(root, filepath.FromSlash(rel))
		if err := journalReplacing(j, f); err != nil {
			return err
		}
		if err := temps.do(f, true, func() error { return writeFile(f, p.edits[rel], 0o644) }); err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.files)) {
		f := filepath.Join(root, filepath.FromSlash(rel))
		if err := j.mkdirAll(filepath.Dir(f)); err != nil {
			return err
		}
		if err := temps.do(f, true, func() error { return writeFile(f, p.files[rel], 0o644) }); err != nil {
			return err
		}
		j.creating(f)
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
	tidy := command(ctx, "go", "mod", "tidy")
	tidy.Dir = root
	var out bytes.Buffer
	tidy.Stdout, tidy.Stderr = &out, &out
	if err := runCommand(tidy); err != nil {
		return fmt.Errorf("go mod tidy: %w\n%s", err, out.String())
	}
	for _, s := range p.printed {
		_, _ = fmt.Fprint(stdout, "apigen create: "+s)
	}
	if p.doneNote != "" {
		_, _ = fmt.Fprintln(stdout, "apigen create: "+p.doneNote)
	}
	return nil
}

// journalReplacing records the file p, if it exists, in j before it is
// replaced.
func journalReplacing(j *journal, p string) error {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		j.creating(p)
		return nil
	}
	if err != nil {
		return err
	}
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	j.replacing(p, ownedFile{data: data, mode: info.Mode().Perm()})
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

// refuseClash returns an error if the new kind of s has a Go type name
// (Kind, KindList, KindSpec, KindStatus) or a plural that an existing
// kind of its group has, or a type name its API package declares.
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
	if _, err := os.Stat(dir); err != nil {
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
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, spec := range g.Specs {
					if n := spec.(*ast.TypeSpec).Name.Name; slices.Contains(names(s.Kind), n) {
						return fmt.Errorf("%s declares a type %s, a type of the new kind %s: nothing written", filepath.ToSlash(must(filepath.Rel(op.mod.root, name))), n, s.Kind)
					}
				}
			}
		}
	}
	return nil
}

// versionTypes returns the types file of the new version s of a kind whose
// versions and hub are given: init's template with the hub's scope markers
// and the hub's Spec and Status types (and the types of its package they
// use), so that the versions start with the same fields and the skeleton
// conversion is exact. Versions whose scopes disagree are refused.
func (op *operatorDir) versionTypes(s *scaffold, versions []kindVersion, hub kindVersion) ([]byte, error) {
	for _, v := range versions {
		if v.nonNamespaced != v.clusterScope || v.clusterScope != hub.clusterScope {
			return nil, fmt.Errorf("the versions of %s disagree on its scope (+genclient:nonNamespaced and +kubebuilder:resource:scope=Cluster go together, in every version; %s of %s has %s): make them agree, then run apigen create api again",
				s.Kind, v.version, v.file, map[bool]string{true: "scope=Cluster", false: "no scope=Cluster"}[v.clusterScope]+" and "+map[bool]string{true: "+genclient:nonNamespaced", false: "no +genclient:nonNamespaced"}[v.nonNamespaced])
		}
	}
	src, err := render("types.go.tmpl", s)
	if err != nil {
		return nil, err
	}
	text := string(src)
	if hub.clusterScope {
		text = strings.Replace(text, "// +genclient\n", "// +genclient\n// +genclient:nonNamespaced\n", 1)
		text = strings.Replace(text, "+kubebuilder:resource:path="+s.Plural+"\n", "+kubebuilder:resource:path="+s.Plural+",scope=Cluster\n", 1)
	}
	// The hub's package: its type declarations and imports.
	hubDir := filepath.Join(op.mod.root, filepath.FromSlash(hub.dir))
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, hubDir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go") && !strings.HasPrefix(fi.Name(), "zz_generated")
	}, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("reading the API package %s: %w", hub.dir, err)
	}
	type typeDecl struct {
		decl *ast.GenDecl
		src  string
		file *ast.File
	}
	decls := map[string]typeDecl{}
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE || len(g.Specs) != 1 {
					continue
				}
				start := g.Pos()
				if g.Doc != nil {
					start = g.Doc.Pos()
				}
				decls[g.Specs[0].(*ast.TypeSpec).Name.Name] = typeDecl{decl: g, file: f,
					src: string(b[fset.Position(start).Offset:fset.Position(g.End()).Offset])}
			}
		}
	}
	// The Spec and Status types, then the hub package's types they use,
	// but the kind's own.
	own := map[string]bool{s.Kind: true, s.Kind + "List": true}
	var copied []string
	var imports [][2]string
	seen := map[string]bool{}
	queue := []string{s.Kind + "Spec", s.Kind + "Status"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		d, ok := decls[name]
		if !ok || seen[name] || own[name] {
			continue
		}
		seen[name] = true
		copied = append(copied, name)
		ast.Inspect(d.decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					for _, imp := range d.file.Imports {
						ipath, _ := strconv.Unquote(imp.Path.Value)
						alias := path.Base(ipath)
						if imp.Name != nil {
							alias = imp.Name.Name
						}
						if alias == x.Name {
							var named string
							if imp.Name != nil {
								named = imp.Name.Name
							}
							imports = append(imports, [2]string{named, ipath})
						}
					}
				}
				return false
			case *ast.Ident:
				if _, ok := decls[n.Name]; ok {
					queue = append(queue, n.Name)
				}
			}
			return true
		})
	}
	if !seen[s.Kind+"Spec"] || !seen[s.Kind+"Status"] {
		return nil, fmt.Errorf("the hub %s of %s has no type %sSpec or %sStatus in its package %s, which the new version copies", hub.version, s.Kind, s.Kind, s.Kind, hub.dir)
	}
	// The new version's package, where it exists, must not declare them.
	if dir := filepath.Join(op.mod.root, filepath.FromSlash(s.APIDir)); dir != hubDir {
		if _, err := os.Stat(dir); err == nil {
			pkgs, err := parser.ParseDir(token.NewFileSet(), dir, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("reading the API package %s: %w", s.APIDir, err)
			}
			for _, pkg := range pkgs {
				for _, f := range pkg.Files {
					for _, d := range f.Decls {
						if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
							for _, spec := range g.Specs {
								if n := spec.(*ast.TypeSpec).Name.Name; slices.Contains(copied, n) {
									return nil, fmt.Errorf("%s declares a type %s, which the new version copies from %s's %s: nothing written", s.APIDir, n, s.Kind, hub.version)
								}
							}
						}
					}
				}
			}
		}
	}
	// Replace the template's Spec and Status with the hub's, add the rest.
	tfset := token.NewFileSet()
	f, err := parser.ParseFile(tfset, "types.go", text, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	type span struct{ start, end int }
	var spans []span
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE || len(g.Specs) != 1 {
			continue
		}
		if n := g.Specs[0].(*ast.TypeSpec).Name.Name; n == s.Kind+"Spec" || n == s.Kind+"Status" {
			start := g.Pos()
			if g.Doc != nil {
				start = g.Doc.Pos()
			}
			spans = append(spans, span{tfset.Position(start).Offset, tfset.Position(g.End()).Offset})
		}
	}
	for i := len(spans) - 1; i >= 0; i-- {
		text = text[:spans[i].start] + text[spans[i].end:]
	}
	var b strings.Builder
	b.WriteString(text)
	for _, name := range copied {
		b.WriteString("\n" + decls[name].src + "\n")
	}
	text = b.String()
	nfset := token.NewFileSet()
	nf, err := parser.ParseFile(nfset, "types.go", text, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("the new version's types, with the hub's: %w", err)
	}
	for _, imp := range imports {
		astutil.AddNamedImport(nfset, nf, imp[0], imp[1])
	}
	var out bytes.Buffer
	if err := format.Node(&out, nfset, nf); err != nil {
		return nil, err
	}
	return format.Source(out.Bytes())
}
