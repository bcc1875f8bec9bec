package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
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
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/gengo/v2/namer"
	"k8s.io/gengo/v2/types"
)

//go:embed scaffold/*.tmpl
var scaffoldTemplates embed.FS

// scaffold is what init writes a new operator from.
type scaffold struct {
	Module, Name, Namespace, Image string
	API, Webhooks                  bool
	ClusterScoped                  bool // the kind is cluster-scoped (+genclient:nonNamespaced, scope=Cluster): its clients, apply configurations, keys and objects have no namespace
	Group, GroupDir, Version, Kind string
	Plural, Alias, APIDir          string
	Lower                          string // the kind as the start of a Go name, and the controller's queue name (lowerCamel)
	ClientPlural                   string // the plural of the clients' and informers' methods
	GroupMethod, VersionMethod     string // the Go names of the group and version in the generated clientset and informer factory
	GroupGoName                    string // the +groupGoName of the group's packages, if they have one, which names GroupMethod
	GenerateArgs                   string
}

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// The parts of an -api, GROUP/VERSION/KIND.
	apiGroup   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
	apiVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
	apiKind    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// packageDir is a group's first label that can name the directory of
	// its Go packages and their import name.
	packageDir = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// runInit is apigen init: it writes a new operator into the module of the
// current directory, generates what derives from it and tidies go.mod.
func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apigen init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s scaffold
	var api string
	var namespaced bool
	fs.StringVar(&s.Name, "name", "", "The operator's name: of its Deployment, ServiceAccount, roles and Lease (required).")
	fs.StringVar(&s.Namespace, "namespace", "", "The operator's namespace (default NAME-system), which its kustomization creates and kubectl delete -k deletes with everything in it: one of its own, not a shared one.")
	fs.StringVar(&s.Image, "image", "", "The operator's image (default NAME:dev).")
	fs.StringVar(&api, "api", "", "A new API to reconcile, GROUP/VERSION/KIND (example.com/v1/Widget); without it, the controller reconciles ConfigMaps.")
	fs.BoolVar(&namespaced, "namespaced", true, "With -api: the kind is namespaced; -namespaced=false makes it cluster-scoped (+genclient:nonNamespaced and scope=Cluster in its types, and a controller and test without namespaces). Not -namespace, the operator's own.")
	fs.BoolVar(&s.Webhooks, "webhooks", false, "With -api: a validating webhook of the API's kind too (webhooks.go), served with a certificate the operator issues itself.")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: apigen init -name NAME [-api GROUP/VERSION/KIND [-namespaced=false] [-webhooks]] [-namespace NS] [-image IMAGE]")
		_, _ = fmt.Fprintln(stderr, "Writes main.go, controller.go, controller_test.go, generate.go and, with -api, the API package")
		_, _ = fmt.Fprintln(stderr, "into the module of the current directory, runs the generation and go mod tidy.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	s.ClusterScoped = !namespaced
	if err := s.complete(api); err != nil || fs.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		_, _ = fmt.Fprintf(stderr, "apigen init: %v\n", err)
		return 2
	}
	if err := s.write(ctx, stdout); err != nil {
		_, _ = fmt.Fprintf(stderr, "apigen init: %v\n", err)
		return 1
	}
	return 0
}

// complete checks the flags and derives the rest.
func (s *scaffold) complete(api string) error {
	if err := s.derive(api); err != nil {
		return err
	}
	if s.API {
		return s.checkGroupLabel(api)
	}
	return nil
}

// derive checks the flags, but for the group's first label, and derives
// the rest, with the API's packages in the directory of that label: init
// checks the label (checkGroupLabel); create puts the packages of a group
// the operator has already in their directory (inGroupDir), which it
// checks instead (checkPackageNames).
func (s *scaffold) derive(api string) error {
	if !dnsLabel.MatchString(s.Name) || len(s.Name) > 50 {
		return fmt.Errorf("-name %q is not a name of lowercase letters, digits and dashes (at most 50)", s.Name)
	}
	if s.Namespace == "" {
		s.Namespace = s.Name + "-system"
	}
	if !dnsLabel.MatchString(s.Namespace) || len(s.Namespace) > 63 {
		return fmt.Errorf("-namespace %q is not a namespace name", s.Namespace)
	}
	if s.Image == "" {
		s.Image = s.Name + ":dev"
	}
	if strings.ContainsAny(s.Image, " \t\n\"'`") {
		return fmt.Errorf("-image %q is not an image name", s.Image)
	}
	if api != "" {
		parts, err := splitAPI(api)
		if err != nil {
			return fmt.Errorf("-api %q is not GROUP/VERSION/KIND: %w", api, err)
		}
		s.API, s.Group, s.Version, s.Kind = true, parts[0], parts[1], parts[2]
		// The group's first label names the API's package directory,
		// its import name and the generated group packages, and
		// client-gen's and informer-gen's Go name of the group.
		s.GroupDir, _, _ = strings.Cut(s.Group, ".")
		s.Lower = lowerCamel(s.Kind)
		// The CRD's plural is controller-gen's; the types get markers
		// that make the CRD and the generated client use it both.
		s.Plural = crdPlural(s.Kind)
		s.ClientPlural = namer.NewPublicPluralNamer(nil).Name(&types.Type{Name: types.Name{Name: s.Kind}})
		s.Alias = s.GroupDir + s.Version
		s.APIDir = path.Join("apis", s.GroupDir, s.Version)
		s.GroupMethod = upperFirst(s.GroupDir)
		s.VersionMethod = upperFirst(s.Version)
	} else {
		s.Kind = "ConfigMap"
	}
	if s.Webhooks && !s.API {
		return errors.New("-webhooks needs -api: the webhook validates the API's kind")
	}
	if s.ClusterScoped && !s.API {
		return errors.New("-namespaced=false needs -api: it makes the API's kind cluster-scoped (ConfigMaps, which the operator reconciles without -api, are namespaced)")
	}
	if service := s.Name + serviceSuffix; s.Webhooks && len(validation.IsDNS1035Label(service)) > 0 {
		return fmt.Errorf("-name %q with -webhooks makes the webhook Service %q, which is not a Service name: the name must start with a letter", s.Name, service)
	}
	args := []string{"-rbac deploy", "-rbac-role " + s.Name, "-rbac-paths .",
		"-deploy deploy", "-deploy-namespace " + s.Namespace, "-deploy-image " + s.Image}
	if s.API {
		args = append([]string{"-crd deploy/crd"}, args...)
	} else {
		args = append([]string{`-out ""`, `-crd ""`}, args...)
	}
	if s.Webhooks {
		args = append(args, "-webhook deploy", "-webhook-paths .")
	}
	s.GenerateArgs = strings.Join(args, " ")
	return nil
}

// splitAPI returns the group, version and kind of api, GROUP/VERSION/KIND,
// or an error that says which of them is wrong and why.
func splitAPI(api string) ([]string, error) {
	parts := strings.Split(api, "/")
	if len(parts) != 3 {
		return nil, fmt.Errorf("it has %d parts separated by \"/\", not 3, such as example.com/v1/Widget", len(parts))
	}
	var wrong []string
	if !apiGroup.MatchString(parts[0]) {
		wrong = append(wrong, fmt.Sprintf("the group %q is not a DNS name with a dot (lowercase letters, digits, dashes and dots, such as example.com), which a CRD's group must be", parts[0]))
	}
	if !apiVersion.MatchString(parts[1]) {
		wrong = append(wrong, fmt.Sprintf("the version %q is not v and a number, then alpha or beta and a number if any (v1, v2beta1, v1alpha1), the versions Kubernetes orders", parts[1]))
	}
	if !apiKind.MatchString(parts[2]) {
		wrong = append(wrong, fmt.Sprintf("the kind %q is not a capital letter followed by letters and digits, as the name of its exported Go type", parts[2]))
	}
	if len(wrong) > 0 {
		return nil, errors.New(strings.Join(wrong, "; "))
	}
	return parts, nil
}

// checkGroupLabel refuses the API api (as given) if the group's first
// label, which names the directory of the API's packages and their import
// name as derive makes them, cannot.
func (s *scaffold) checkGroupLabel(api string) error {
	if !packageDir.MatchString(s.GroupDir) {
		return fmt.Errorf("-api %q: the group's first label %q names the API's Go package directories (%s, and the generated clients' %s/%s) and its import name, which cannot have a dash or begin with a digit: choose a group whose first label is lowercase letters and digits, beginning with a letter",
			api, s.GroupDir, s.APIDir, s.GroupDir, s.Version)
	}
	return s.checkPackageNames(fmt.Sprintf("-api %q: the group's first label %q", api, s.GroupDir), "choose a group whose first label is another word")
}

// checkPackageNames refuses the directory of the API's packages
// (GroupDir) if it makes packages the operator cannot import or compile,
// or their import name (Alias) if the generated clients or the scaffold
// give it another package too, which makes them declare a name twice.
// named says what names the directory, fix what to do, for the error.
func (s *scaffold) checkPackageNames(named, fix string) error {
	if reason := unimportable(s.GroupDir); reason != "" {
		return fmt.Errorf("%s names the API's Go package directories (%s, and the generated clients' %s/%s), and %s: %s",
			named, s.APIDir, s.GroupDir, s.Version, reason, fix)
	}
	other, err := s.importedAs(s.Alias)
	if err != nil {
		return err
	}
	if other != "" {
		return fmt.Errorf("%s names the API's packages and their import name: the generated clients and the scaffold import the API's packages as %s, the name under which they import %s too: %s",
			named, s.Alias, other, fix)
	}
	return nil
}

// unimportable says why a group directory of that name makes packages
// that the operator's main package cannot import, or generated code Go
// cannot compile, or returns "".
func unimportable(dir string) string {
	switch {
	case slices.Contains(informerFactoryMethods, upperFirst(dir)):
		return "the generated informer factory's method for the group would be " + upperFirst(dir) + "(), a method the factory has already"
	case dir == "internal":
		return "the go command lets only the packages beside an internal directory import those in it"
	case dir == "internalinterfaces":
		return "the generated informers have a package of that name, which the group's would import in a cycle"
	case dir == "testdata" || dir == "vendor":
		return "the go command ignores a " + dir + " directory's packages"
	case token.IsKeyword(dir):
		return "it is a Go keyword, which cannot name a package"
	}
	return ""
}

// informerFactoryMethods are the methods of informer-gen's shared
// informer factory other than its groups' (<Group>()).
var informerFactoryMethods = []string{"Start", "Shutdown", "WaitForCacheSync", "ForResource", "InformerFor", "InternalInformerFor"}

// generatedImports are the import names that client-gen, lister-gen and
// informer-gen give packages other than the API's in the code they
// generate for a group, by the package they name.
var generatedImports = map[string]string{
	"metav1": "k8s.io/apimachinery/pkg/apis/meta/v1",
}

// inGroupDir puts the API's packages in the directory dir under apis,
// where the operator keeps its group's packages: apigen generates for a
// directory other than the group's first label, and names the generated
// clients', listers' and informers' group packages, and the packages'
// import names, after the directory (their methods after the label).
func (s *scaffold) inGroupDir(dir string) {
	s.GroupDir, s.Alias = dir, dir+s.Version
	s.APIDir = path.Join("apis", dir, s.Version)
}

// importedAs returns the package, other than the API's, that the
// generated code or a Go file of the scaffold in package main (init's,
// or one that apigen create adds to it later) imports under the name
// alias, or "".
func (s *scaffold) importedAs(alias string) (string, error) {
	data := *s
	data.Module = "example.invalid/module"
	api := data.Module + "/" + data.APIDir
	// The templates, with the data each is executed with.
	type rendering struct {
		tmpl string
		data any
	}
	files := []rendering{{"main.go.tmpl", &data}, {"controller.go.tmpl", &data}, {"controller_test.go.tmpl", &data},
		{"create_controller.go.tmpl", &data}, {"create_controller_test.go.tmpl", &data}}
	if s.Webhooks {
		files = append(files, rendering{"webhooks.go.tmpl", &data})
	}
	for _, typ := range []string{"default", "validate", "convert"} {
		files = append(files, rendering{"create_webhook.go.tmpl", webhookData{scaffold: &data, Type: typ}},
			rendering{"create_webhook_test.go.tmpl", webhookData{scaffold: &data, Type: typ}})
	}
	for _, file := range files {
		t, err := parseScaffold(file.tmpl)
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, file.data); err != nil {
			return "", err
		}
		f, err := parser.ParseFile(token.NewFileSet(), file.tmpl, b.Bytes(), parser.ImportsOnly)
		if err != nil {
			return "", err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil || p == api {
				continue
			}
			if imp.Name != nil && imp.Name.Name == alias || imp.Name == nil && path.Base(p) == alias {
				return p, nil
			}
		}
	}
	return generatedImports[alias], nil
}

// lowerCamel returns the kind name as the start of a Go name, as
// kubebuilder lowers it: its first letter lower case, or a leading
// acronym's letters (DNSRecord is dnsRecord, DNS dns).
func lowerCamel(kind string) string {
	r := []rune(kind)
	n := 0 // the upper-case letters it starts with
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	if n > 1 && n < len(r) && unicode.IsLower(r[n]) {
		n-- // the last of them starts the next word: DNSRecord's R
	}
	for i := range n {
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

// KindPlural is the kind's plural for prose: its resource's plural (as
// the CRD, the role and the client have it), spelled as the kind where
// they agree (Shelves, HTTPRoutes, People).
func (s *scaffold) KindPlural() string {
	if n := sharedPrefix(s.Kind, s.plural()); n > 0 {
		return s.Kind[:n] + s.plural()[n:]
	}
	return upperFirst(s.plural())
}

// LowerPlural is the kind's plural as a Go name, lowerCamel as Lower
// (shelves, httpRoutes, people), or Lower and an s where the resource's
// plural makes no Go name.
func (s *scaffold) LowerPlural() string {
	lower := lowerCamel(s.Kind)
	n := sharedPrefix(lower, s.plural())
	if name := lower[:n] + s.plural()[n:]; token.IsIdentifier(name) {
		return name
	}
	return lower + "s"
}

// plural is the resource's plural, controller-gen's of the kind where s
// has none (ConfigMap without -api).
func (s *scaffold) plural() string {
	if s.Plural == "" {
		return crdPlural(s.Kind)
	}
	return s.Plural
}

// sharedPrefix returns the length of the start that the kind's name
// (ASCII, as apiKind has it) and its lower-case plural share, but for
// the letters' case.
func sharedPrefix(kind, plural string) int {
	n := 0
	for n < len(kind) && n < len(plural) && unicode.ToLower(rune(kind[n])) == rune(plural[n]) {
		n++
	}
	return n
}

// WebhookPath is the path of the kind's webhook of the type typ
// (default, validate or convert): the kind in lower case, as
// kubebuilder's paths have it (/default-dnsrecord).
func (s *scaffold) WebhookPath(typ string) string {
	return "/" + typ + "-" + strings.ToLower(s.Kind)
}

// WebhookPathConst is the constant of zz_generated.webhooks.go that
// holds WebhookPath(typ), named after the path as apigen's generation
// names it.
func (s *scaffold) WebhookPathConst(typ string) string {
	return "webhookPath" + identifier(s.WebhookPath(typ))
}

func upperFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// write writes the files, refusing to replace any, then generates and
// tidies. Everything is checked before anything is written, and a step
// that fails undoes what the steps before it wrote: an init that fails
// leaves the module as it was.
func (s *scaffold) write(ctx context.Context, stdout io.Writer) (err error) {
	mod, err := findModule()
	if err != nil {
		return err
	}
	s.Module = mod.path
	files := map[string]string{
		"main.go":            "main.go.tmpl",
		"controller.go":      "controller.go.tmpl",
		"controller_test.go": "controller_test.go.tmpl",
		"generate.go":        "generate.go.tmpl",
	}
	if s.API {
		files[path.Join(s.APIDir, "doc.go")] = "doc.go.tmpl"
		files[path.Join(s.APIDir, "types.go")] = "types.go.tmpl"
	}
	if s.Webhooks {
		files["webhooks.go"] = "webhooks.go.tmpl"
	}
	// The manifests the generation writes by fixed names are the new
	// operator's too: init writes none of them over a file of the module.
	var taken []string
	generated := []string{path.Join(initDeployDir, "role.yaml")}
	for _, f := range deployFiles {
		generated = append(generated, path.Join(initDeployDir, f))
	}
	if s.API {
		generated = append(generated, path.Join(initCRDDir, s.Group+"_"+s.Plural+".yaml"))
	}
	if s.Webhooks {
		// The webhooks' manifests beside the roles, and their Go file
		// beside webhooks.go.
		generated = append(generated, path.Join(initDeployDir, webhookFile), webhookGoFile)
	}
	for _, rel := range generated {
		if _, err := os.Lstat(filepath.Join(mod.root, filepath.FromSlash(rel))); err == nil {
			taken = append(taken, rel)
		}
	}
	rendered := map[string][]byte{}
	for rel, name := range files {
		if _, err := os.Lstat(filepath.Join(mod.root, filepath.FromSlash(rel))); err == nil {
			taken = append(taken, rel)
		}
		t, err := parseScaffold(name)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, s); err != nil {
			return err
		}
		src, err := format.Source(b.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		rendered[rel] = src
	}
	if len(taken) > 0 {
		slices.Sort(taken)
		return fmt.Errorf("the module already has %s: init writes a new operator into a module without them", strings.Join(taken, ", "))
	}

	j := newJournal()
	defer func() {
		if err == nil {
			j.keep()
			return
		}
		if uerr := j.undo(); uerr != nil {
			err = fmt.Errorf("%w\n(and undoing what init wrote: %w)", err, uerr)
		} else {
			err = fmt.Errorf("%w\n(init undid what it wrote: the files it replaced or removed are written back, those it created are removed)", err)
		}
	}()
	for _, name := range []string{"go.mod", "go.sum"} {
		p := filepath.Join(mod.root, name)
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			j.creating(p) // by go mod tidy
			continue
		}
		if err != nil {
			return err
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		j.replacing(p, ownedFile{data: data, mode: info.Mode().Perm()})
	}
	for _, rel := range slices.Sorted(maps.Keys(rendered)) {
		p := filepath.Join(mod.root, filepath.FromSlash(rel))
		if err := j.mkdirAll(filepath.Dir(p)); err != nil {
			return err
		}
		// Written beside and renamed into place, recorded with it: a
		// write that fails leaves no part of the file behind.
		temps.locked(func() {
			if err = putFileLocked(p, rendered[rel], 0o644); err == nil {
				j.creatingLocked(p)
				j.wroteLocked(p, rendered[rel])
			}
		})
		if err != nil {
			return err
		}
	}
	_, _ = fmt.Fprintf(stdout, "apigen init: wrote %d files for %s\n", len(rendered), s.Name)

	cfg := config{out: "generated", crdDir: initCRDDir, rbacDir: initDeployDir, rbacRole: s.Name, rbacPaths: []string{"."},
		deployDir: initDeployDir, deployNamespace: s.Namespace, deployImage: s.Image, apis: "apis", journal: j}
	if !s.API {
		cfg.out, cfg.crdDir = "", ""
	}
	if s.Webhooks {
		cfg.webhookDir, cfg.webhookPaths = "deploy", []string{"."}
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(mod.root); err != nil {
		return err
	}
	err = generateAll(ctx, cfg, stdout)
	if cerr := os.Chdir(wd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generating: %w", err)
	}
	checkpoint("tidy")
	tidy := command(ctx, "go", "mod", "tidy")
	tidy.Dir = mod.root
	var out bytes.Buffer
	tidy.Stdout, tidy.Stderr = &out, &out
	if err := runCommand(tidy); err != nil {
		return fmt.Errorf("go mod tidy: %w\n%s", err, out.String())
	}
	_, _ = fmt.Fprintln(stdout, "apigen init: go mod tidy done; go test ./... and go build . work now")
	return nil
}

// The directories of what init generates, as its generate.go names them.
const (
	initDeployDir = "deploy"
	initCRDDir    = "deploy/crd"
)
