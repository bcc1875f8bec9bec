package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	applyargs "k8s.io/code-generator/cmd/applyconfiguration-gen/args"
	applygen "k8s.io/code-generator/cmd/applyconfiguration-gen/generators"
	clientargs "k8s.io/code-generator/cmd/client-gen/args"
	clientgen "k8s.io/code-generator/cmd/client-gen/generators"
	deepcopyargs "k8s.io/code-generator/cmd/deepcopy-gen/args"
	deepcopygen "k8s.io/code-generator/cmd/deepcopy-gen/generators"
	informerargs "k8s.io/code-generator/cmd/informer-gen/args"
	informergen "k8s.io/code-generator/cmd/informer-gen/generators"
	listerargs "k8s.io/code-generator/cmd/lister-gen/args"
	listergen "k8s.io/code-generator/cmd/lister-gen/generators"
	registerargs "k8s.io/code-generator/cmd/register-gen/args"
	registergen "k8s.io/code-generator/cmd/register-gen/generators"
	"k8s.io/code-generator/pkg/util"
	"k8s.io/gengo/v2"
	"k8s.io/gengo/v2/generator"
	"k8s.io/gengo/v2/namer"
	"k8s.io/klog/v2"
	openapiargs "k8s.io/kube-openapi/cmd/openapi-gen/args"
	openapigen "k8s.io/kube-openapi/pkg/generators"
)

// openAPIBasePackages hold the types every API type refers to (ObjectMeta,
// ListMeta, Time, ...); their definitions complete the schema.
var openAPIBasePackages = []string{
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/version",
	"k8s.io/apimachinery/pkg/api/resource",
	"k8s.io/apimachinery/pkg/util/intstr",
}

// generateCode runs the Go code generators of k8s.io/code-generator and
// k8s.io/kube-openapi in the module root, writing into the stage: deep
// copies for the packages of copied, registers, apply configurations, the
// clientset, listers and informers for the API packages pkgs, with the
// OpenAPI schema of the packages of described.
func generateCode(ctx context.Context, mod module, st *stage, old files, pkgs []apiPackage, copied, described []string, out, header string) error {
	var inputs []string
	for _, p := range pkgs {
		inputs = append(inputs, p.importPath)
	}
	outPkg := mod.importPath(out)
	outDir := st.path(out)

	dc := deepcopyargs.New()
	checkpoint("deepcopy-gen")
	if err := runGengo("deepcopy-gen", dc.AddFlags, []string{
		"--go-header-file", header, "--output-file", deepcopyFile,
	}, dc.Validate, staged(mod.root, st, func(c *generator.Context) []generator.Target { return deepcopygen.GetTargets(c, dc) }),
		deepcopygen.NameSystems, deepcopygen.DefaultNameSystem(), slices.Compact(slices.Sorted(slices.Values(slices.Concat(inputs, copied))))); err != nil {
		return err
	}

	var unregistered []string
	for _, p := range pkgs {
		if !p.registers {
			unregistered = append(unregistered, p.importPath)
		}
	}
	if len(unregistered) > 0 {
		rg := registerargs.New()
		checkpoint("register-gen")
		if err := runGengo("register-gen", rg.AddFlags, []string{
			"--go-header-file", header, "--output-file", registerFile,
		}, rg.Validate, staged(mod.root, st, func(c *generator.Context) []generator.Target { return registergen.GetTargets(c, rg) }),
			registergen.NameSystems, registergen.DefaultNameSystem(), unregistered); err != nil {
			return err
		}
	}

	schema, err := openAPISchema(ctx, mod, st, old, inputs, described, header)
	if err != nil {
		return err
	}

	ac := applyargs.New()
	checkpoint("applyconfiguration-gen")
	if err := runGengo("applyconfiguration-gen", func(fs *pflag.FlagSet) { ac.AddFlags(fs, "") }, []string{
		"--go-header-file", header,
		"--output-dir", filepath.Join(outDir, "applyconfiguration"),
		"--output-pkg", path.Join(outPkg, "applyconfiguration"),
		"--openapi-schema", schema,
	}, ac.Validate, func(c *generator.Context) []generator.Target { return applygen.GetTargets(c, ac) },
		applygen.NameSystems, applygen.DefaultNameSystem(), inputs); err != nil {
		return err
	}

	cl := clientargs.New()
	clientFlags := []string{
		"--go-header-file", header,
		"--output-dir", filepath.Join(outDir, "clientset"),
		"--output-pkg", path.Join(outPkg, "clientset"),
		"--clientset-name", "versioned",
		"--input-base", "",
		"--apply-configuration-package", path.Join(outPkg, "applyconfiguration"),
	}
	for _, p := range pkgs {
		clientFlags = append(clientFlags, "--input", p.importPath)
	}
	checkpoint("client-gen")
	if err := runGengo("client-gen", func(fs *pflag.FlagSet) { cl.AddFlags(fs, "") }, clientFlags,
		cl.Validate, func(c *generator.Context) []generator.Target { return clientgen.GetTargets(c, cl) },
		func() namer.NameSystems {
			return clientgen.NameSystems(util.PluralExceptionListToMapOrDie(cl.PluralExceptions))
		},
		clientgen.DefaultNameSystem(), inputs); err != nil {
		return err
	}

	ls := listerargs.New()
	checkpoint("lister-gen")
	if err := runGengo("lister-gen", ls.AddFlags, []string{
		"--go-header-file", header,
		"--output-dir", filepath.Join(outDir, "listers"),
		"--output-pkg", path.Join(outPkg, "listers"),
	}, ls.Validate, func(c *generator.Context) []generator.Target { return listergen.GetTargets(c, ls) },
		func() namer.NameSystems {
			return listergen.NameSystems(util.PluralExceptionListToMapOrDie(ls.PluralExceptions))
		},
		listergen.DefaultNameSystem(), inputs); err != nil {
		return err
	}

	inf := informerargs.New()
	checkpoint("informer-gen")
	return runGengo("informer-gen", inf.AddFlags, []string{
		"--go-header-file", header,
		"--output-dir", filepath.Join(outDir, "informers"),
		"--output-pkg", path.Join(outPkg, "informers"),
		"--versioned-clientset-package", path.Join(outPkg, "clientset", "versioned"),
		"--listers-package", path.Join(outPkg, "listers"),
	}, inf.Validate, func(c *generator.Context) []generator.Target { return informergen.GetTargets(c, inf) },
		func() namer.NameSystems {
			return informergen.NameSystems(util.PluralExceptionListToMapOrDie(inf.PluralExceptions))
		},
		informergen.DefaultNameSystem(), inputs)
}

// stagedTarget is a target of a generator that writes beside its input
// package, moved to the stage.
type stagedTarget struct {
	generator.Target
	dir string
}

func (t stagedTarget) Dir() string { return t.dir }

// staged moves the targets of get, in the module's directories, to the
// stage.
func staged(root string, st *stage, get func(*generator.Context) []generator.Target) func(*generator.Context) []generator.Target {
	return func(c *generator.Context) []generator.Target {
		targets := get(c)
		for i, t := range targets {
			rel, err := filepath.Rel(root, t.Dir())
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				klog.Fatalf("package %s is in %s, outside the module in %s", t.Path(), t.Dir(), root)
			}
			targets[i] = stagedTarget{Target: t, dir: filepath.Join(st.tree, rel)}
		}
		return targets
	}
}

// runGengo runs one gengo-based generator as its command would with flags:
// the flags parsed into its arguments, validated, then its targets
// executed over inputs. nameSystems gives the generator's name systems,
// once the flags are parsed.
func runGengo(name string, addFlags func(*pflag.FlagSet), flags []string, validate func() error,
	targets func(*generator.Context) []generator.Target, nameSystems func() namer.NameSystems, defaultNameSystem string, inputs []string) error {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	addFlags(fs)
	if err := fs.Parse(flags); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ns := nameSystems()
	return guard(name, func() error { return gengo.Execute(ns, defaultNameSystem, targets, gengo.StdBuildTag, inputs) })
}

// klogHeader is the prefix of a klog line of severity E or F.
var klogHeader = regexp.MustCompile(`^[EF]\d{4} [0-9:.]+\s+\d+ [^\]]*\] `)

// fatalMessages picks the error and fatal messages out of klog's output
// (which also holds goroutine stacks), each once.
func fatalMessages(logs string) string {
	var msgs []string
	for _, line := range strings.Split(logs, "\n") {
		if loc := klogHeader.FindStringIndex(line); loc != nil && !slices.Contains(msgs, line[loc[1]:]) {
			msgs = append(msgs, line[loc[1]:])
		}
	}
	if len(msgs) == 0 {
		return "it exited without a message"
	}
	return strings.Join(msgs, "; ")
}

// exitCalled is what klog's exit panics with while guard runs: the
// generators end the program with klog.Fatal on some bad input.
type exitCalled struct{ code int }

// guard runs one generator as the program name, turning its klog.Fatal
// into an error that carries what it logged, so that the run can put back
// the files it owns. The gengo generators name themselves in the "Code
// generated by" line of each file after the program's name.
//
// klog's output goes to a buffer through a logger rather than through
// SetOutput: with its output redirected, a klog.Fatal still writes the
// stack of its goroutine to standard error, which a user would see as a
// crash of apigen. What the generator logged as an error without ending
// the run is passed on to standard error.
func guard(name string, generate func() error) (err error) {
	program := os.Args[0]
	os.Args[0] = name
	defer func() { os.Args[0] = program }()
	var logs bytes.Buffer
	klog.SetLoggerWithOptions(logr.Discard(), klog.WriteKlogBuffer(func(data []byte) { logs.Write(data) }))
	exit := klog.OsExit
	klog.OsExit = func(code int) { panic(exitCalled{code}) }
	defer func() {
		klog.OsExit = exit
		klog.ClearLogger()
		if r := recover(); r != nil {
			if _, ok := r.(exitCalled); !ok {
				panic(r)
			}
			err = fmt.Errorf("%s failed: %s", name, fatalMessages(logs.String()))
			return
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.HasPrefix(line, "E") && klogHeader.MatchString(line) {
				fmt.Fprintf(os.Stderr, "%s: %s\n", name, line[klogHeader.FindStringIndex(line)[1]:])
			}
		}
	}()
	if err := generate(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// openAPISchema generates the OpenAPI definitions of the packages of
// described (and of the types they refer to) with openapi-gen into the
// stage, builds a program that prints them as an OpenAPI v2 document, and
// returns the path of a file in the stage holding that document.
//
// Nothing in the module changes: the generated package and the program
// are in a directory of the module that exists only in the go command's
// -overlay (with the staged deep copies and registers in place), its name
// beginning with "_" so that no pattern matches it; the build resolves
// requirements against copies of go.mod and go.sum, or, in workspace mode,
// with the workspace's, and if those cannot resolve an import (see
// unresolvedImport), against copies of the module's outside the workspace
// (GOWORK=off), saying so on stderr.
func openAPISchema(ctx context.Context, mod module, st *stage, old files, inputs, described []string, header string) (schemaFile string, err error) {
	refs, err := referencedAPIPackages(ctx, mod, inputs)
	if err != nil {
		return "", err
	}
	virtual := "_" + filepath.Base(st.dir)
	oa := openapiargs.New()
	oa.OutputDir = filepath.Join(st.dir, "openapi")
	oa.OutputPkg = mod.importPath(virtual + "/openapi")
	oa.OutputFile = "zz_generated.openapi.go"
	oa.GoHeaderFile = header
	oa.ReportFilename = filepath.Join(st.dir, "api-rule-violations.txt")
	if err := oa.Validate(); err != nil {
		return "", fmt.Errorf("openapi-gen: %w", err)
	}
	boilerplate, err := gengo.GoBoilerplate(header, gengo.StdBuildTag, gengo.StdGeneratedBy)
	if err != nil {
		return "", fmt.Errorf("openapi-gen: %w", err)
	}
	all := slices.Concat(inputs, described, openAPIBasePackages, refs)
	slices.Sort(all)
	all = slices.Compact(all)
	checkpoint("openapi-gen")
	err = guard("openapi-gen", func() error {
		return gengo.Execute(openapigen.NameSystems(), openapigen.DefaultNameSystem(),
			func(c *generator.Context) []generator.Target { return openapigen.GetOpenAPITargets(c, oa, boilerplate) },
			gengo.StdBuildTag, all)
	})
	if err != nil {
		return "", err
	}

	mainFile := filepath.Join(st.dir, "schema.go")
	src := strings.ReplaceAll(schemaProgram, "OPENAPI_PACKAGE", oa.OutputPkg)
	if err := os.WriteFile(mainFile, []byte(src), 0o644); err != nil {
		return "", err
	}
	overlay, err := st.overlay(mod.root, old, "schema", map[string]string{
		filepath.Join(mod.root, virtual, "openapi", oa.OutputFile): filepath.Join(oa.OutputDir, oa.OutputFile),
		filepath.Join(mod.root, virtual, "schema", "main.go"):      mainFile,
	})
	if err != nil {
		return "", err
	}
	checkpoint("schema")
	build := func(env []string, flags []string) ([]byte, error) {
		var stdout, stderr bytes.Buffer
		cmd := command(ctx, "go", slices.Concat([]string{"run", "-overlay=" + overlay}, flags, []string{"./" + virtual + "/schema"})...)
		cmd.Dir = mod.root
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := runCommand(cmd); err != nil {
			return nil, fmt.Errorf("building the OpenAPI schema of %s: %w\n%s", strings.Join(inputs, " "), err, stderr.String())
		}
		if !json.Valid(stdout.Bytes()) {
			return nil, fmt.Errorf("the OpenAPI schema program printed no JSON:\n%s", stderr.String())
		}
		return stdout.Bytes(), nil
	}
	// The copies are outside the module: a go.mod inside it would make a
	// module of its own.
	modFlags, cleanup, err := goModCopy(mod.root)
	if err != nil {
		return "", err
	}
	defer cleanup()
	workspace, err := inWorkspace(ctx, mod.root)
	if err != nil {
		return "", err
	}
	var doc []byte
	if workspace {
		// The go command refuses -modfile in workspace mode.
		doc, err = build(nil, nil)
		if err != nil {
			why := unresolvedImport(err.Error())
			if why == "" {
				return "", err
			}
			_, _ = fmt.Fprintf(os.Stderr, "apigen: the workspace cannot resolve an import of the OpenAPI schema's build (%s): building it outside the workspace (GOWORK=off), against a copy of the module's go.mod\n", why)
			var errOff error
			if doc, errOff = build([]string{"GOWORK=off"}, modFlags); errOff != nil {
				return "", fmt.Errorf("%w\n(and with GOWORK=off: %w)", err, errOff)
			}
		}
	} else if doc, err = build(nil, modFlags); err != nil {
		return "", err
	}
	schemaFile = filepath.Join(st.dir, "openapi.json")
	return schemaFile, os.WriteFile(schemaFile, doc, 0o644)
}

// referencedAPIPackages lists the packages the API packages import, directly
// or not, whose types' definitions belong in the schema too: the k8s.io/api
// packages, and the packages outside k8s.io whose package comment has
// "+k8s:openapi-gen=true" (shared API types of another module, such as
// ctrlkit's queue/multicluster/fleetv1).
func referencedAPIPackages(ctx context.Context, mod module, inputs []string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	cmd := command(ctx, "go", append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}\t{{.Dir}}{{end}}"}, inputs...)...)
	cmd.Dir = mod.root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runCommand(cmd); err != nil {
		return nil, fmt.Errorf("listing the imports of the API packages: %w\n%s", err, stderr.String())
	}
	var refs []string
	for line := range strings.Lines(stdout.String()) {
		p, dir, _ := strings.Cut(strings.TrimSpace(line), "\t")
		switch {
		case p == "":
		case strings.HasPrefix(p, "k8s.io/api/"):
			refs = append(refs, p)
		case strings.HasPrefix(p, "k8s.io/") || dir == "":
		default:
			tags, err := packageTags(dir)
			if err != nil {
				return nil, fmt.Errorf("reading the package comment of %s: %w", p, err)
			}
			if tags["k8s:openapi-gen"] == "true" {
				refs = append(refs, p)
			}
		}
	}
	return refs, nil
}

// schemaProgram prints the definitions of the generated OpenAPI package as
// an OpenAPI v2 document, named as applyconfiguration-gen looks them up:
// Go type names in REST-friendly form (com.example.pkg.Type) unless the
// package already gives a model name.
const schemaProgram = `package main

import (
	"encoding/json"
	"os"
	"strings"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	openapi "OPENAPI_PACKAGE"
)

func friendly(name string) string {
	if strings.Contains(name, "/") {
		return util.ToRESTFriendlyName(name)
	}
	return name
}

func main() {
	defs := openapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + friendly(name))
	})
	out := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		schema := def.Schema
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schema = v2
		}
		out[friendly(name)] = schema
	}
	doc := spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "apigen", Version: "unversioned"}},
		Definitions: out,
	}}
	if err := json.NewEncoder(os.Stdout).Encode(&doc); err != nil {
		os.Exit(1)
	}
}
`
