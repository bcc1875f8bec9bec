package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// config is what one run generates, with directories relative to the
// current directory until generateAll makes them relative to the module root.
type config struct {
	apis      string   // directory of the <group>/<version> API packages
	out       string   // directory of the generated Go packages
	crdDir    string   // directory of the CRD manifests; "" skips them
	rbacDir   string   // directory of role.yaml; "" skips it
	rbacRole  string   // name of the ClusterRole and Roles
	rbacPaths []string // package patterns with +kubebuilder:rbac markers
	header    string   // file heading every generated Go file; "" for none
	verify    bool     // compare instead of writing
}

// module is the Go module the generated code belongs to.
type module struct {
	root string // absolute directory holding go.mod
	path string // module path
}

// apiPackage is one <group>/<version> package of API types.
type apiPackage struct {
	dir        string // relative to the module root, slash-separated
	importPath string
	groupVer   string // "<group dir>/<version dir>", as client-gen's --input takes it
	registers  bool   // its own code declares SchemeGroupVersion: no register-gen
}

// generatedClientDirs are the directories under config.out that a run owns
// entirely.
var generatedClientDirs = []string{"applyconfiguration", "clientset", "listers", "informers"}

// Files generated into the API packages.
const (
	deepcopyFile = "zz_generated.deepcopy.go"
	registerFile = "zz_generated.register.go"
)

// generateAll runs every generator for cfg. Whatever happens, the files it
// owns end either all regenerated or as they were: a failed run, or one with
// cfg.verify, puts back what was there before.
func generateAll(ctx context.Context, cfg config, stdout io.Writer) (err error) {
	mod, err := findModule()
	if err != nil {
		return err
	}
	for _, p := range []*string{&cfg.apis, &cfg.out, &cfg.crdDir, &cfg.rbacDir, &cfg.header} {
		if *p == "" {
			continue
		}
		if *p, err = mod.rel(*p); err != nil {
			return err
		}
	}
	if cfg.header != "" {
		cfg.header = filepath.Join(mod.root, cfg.header)
	}
	// Without Go output and CRDs, a run makes the roles only, and needs no
	// API packages.
	apiRun := cfg.out != "" || cfg.crdDir != ""
	var pkgs []apiPackage
	if apiRun {
		if pkgs, err = findAPIPackages(mod, cfg.apis); err != nil {
			return err
		}
	} else if cfg.rbacDir == "" {
		return fmt.Errorf("nothing to generate: -out, -crd and -rbac are all empty")
	}

	before, err := snapshot(mod.root, cfg)
	if err != nil {
		return err
	}
	absent := absentDirs(mod.root, cfg)
	restore := true
	defer func() {
		if !restore {
			return
		}
		if rerr := before.restoreOver(mod.root, cfg); rerr != nil && err == nil {
			err = rerr
		}
		removeIfEmpty(mod.root, absent)
	}()
	if err := before.remove(mod.root); err != nil {
		return err
	}

	// The generators resolve packages and write files relative to the
	// working directory.
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(mod.root); err != nil {
		return err
	}
	defer func() {
		if cerr := os.Chdir(wd); cerr != nil && err == nil {
			err = cerr
		}
	}()

	header := cfg.header
	if header == "" {
		f, err := os.CreateTemp("", "apigen-header")
		if err != nil {
			return err
		}
		_ = f.Close()
		defer func() { _ = os.Remove(f.Name()) }()
		header = f.Name()
	}
	if cfg.out != "" {
		if err := generateCode(ctx, mod, pkgs, cfg.out, header); err != nil {
			return err
		}
	}
	if cfg.crdDir != "" || cfg.rbacDir != "" {
		loads, closeLoads, err := newPackageLoads(ctx, mod.root)
		if err != nil {
			return err
		}
		defer closeLoads()
		if cfg.crdDir != "" {
			if err := generateCRDs(loads, cfg.apis, cfg.crdDir); err != nil {
				return err
			}
		}
		if cfg.rbacDir != "" {
			if err := generateRBAC(loads, cfg.rbacPaths, cfg.rbacRole, cfg.rbacDir); err != nil {
				return err
			}
		}
	}

	after, err := snapshot(mod.root, cfg)
	if err != nil {
		return err
	}
	if cfg.verify {
		if diff := before.diff(after); len(diff) > 0 {
			return &staleError{files: diff}
		}
		_, _ = fmt.Fprintf(stdout, "apigen: %d generated files are up to date\n", len(after))
		return nil
	}
	restore = false
	_, _ = fmt.Fprintf(stdout, "apigen: wrote %d files", len(after))
	if len(pkgs) > 0 {
		_, _ = fmt.Fprintf(stdout, " for %s", strings.Join(groupVersions(pkgs), " "))
	}
	_, _ = fmt.Fprintln(stdout)
	return nil
}

// staleError lists generated files that differ from what a run writes.
type staleError struct{ files []string }

func (e *staleError) Error() string {
	return "apigen: generated files are out of date (run apigen without -verify and commit the result):\n  " +
		strings.Join(e.files, "\n  ")
}

func groupVersions(pkgs []apiPackage) []string {
	var gvs []string
	for _, p := range pkgs {
		gvs = append(gvs, p.groupVer)
	}
	return gvs
}

// findModule finds the module of the current directory.
func findModule() (module, error) {
	dir, err := os.Getwd()
	if err != nil {
		return module{}, err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			p := modfile.ModulePath(data)
			if p == "" {
				return module{}, fmt.Errorf("%s has no module line", filepath.Join(dir, "go.mod"))
			}
			return module{root: dir, path: p}, nil
		}
		if !os.IsNotExist(err) {
			return module{}, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return module{}, fmt.Errorf("no go.mod in the current directory or above it: run apigen inside the module of the API types")
		}
		dir = parent
	}
}

// rel turns a path given on the command line into one relative to the
// module root, refusing paths outside the module.
func (m module) rel(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(m.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the module in %s", p, m.root)
	}
	return filepath.ToSlash(r), nil
}

// importPath is the import path of a directory relative to the module root.
func (m module) importPath(dir string) string {
	if dir == "." {
		return m.path
	}
	return path.Join(m.path, dir)
}

// findAPIPackages lists the <group>/<version> packages under apis: the
// directories two levels down whose package comment names a +groupName.
func findAPIPackages(mod module, apis string) ([]apiPackage, error) {
	groups, err := os.ReadDir(filepath.Join(mod.root, apis))
	if err != nil {
		return nil, fmt.Errorf("reading the API directory: %w", err)
	}
	var pkgs []apiPackage
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		versions, err := os.ReadDir(filepath.Join(mod.root, apis, g.Name()))
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if !v.IsDir() {
				continue
			}
			dir := path.Join(apis, g.Name(), v.Name())
			tags, err := packageTags(filepath.Join(mod.root, dir))
			if err != nil {
				return nil, err
			}
			if _, ok := tags["groupName"]; !ok {
				continue
			}
			if tags["k8s:openapi-gen"] != "true" {
				return nil, fmt.Errorf("package %s: its package comment needs the line \"+k8s:openapi-gen=true\" (the OpenAPI schema makes the fake clientset and server-side apply work for its types)", dir)
			}
			registers, err := declaresScheme(filepath.Join(mod.root, dir))
			if err != nil {
				return nil, err
			}
			pkgs = append(pkgs, apiPackage{dir: dir, importPath: mod.importPath(dir), groupVer: g.Name() + "/" + v.Name(), registers: registers})
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no API package under %s: expected <group>/<version> directories whose package comment has \"+groupName=<group>\"", apis)
	}
	slices.SortFunc(pkgs, func(a, b apiPackage) int { return strings.Compare(a.dir, b.dir) })
	return pkgs, nil
}
