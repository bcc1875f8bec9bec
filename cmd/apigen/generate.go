package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"maps"
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
	apis            string   // directory of the <group>/<version> API packages
	out             string   // directory of the generated Go packages
	crdDir          string   // directory of the CRD manifests; "" skips them
	rbacDir         string   // directory of role.yaml; "" skips it
	rbacRole        string   // name of the ClusterRole and Roles
	rbacPaths       []string // package patterns with +kubebuilder:rbac markers
	webhookDir      string   // directory of webhook.yaml and crd-conversion.yaml; "" skips them
	webhookPaths    []string // package patterns, one of which holds the webhook markers
	deployDir       string   // directory of the deploy manifests; "" skips them
	deployNamespace string   // the operator's namespace
	deployImage     string   // the operator's image
	header          string   // file heading every generated Go file; "" for none
	verify          bool     // compare instead of writing
	journal         *journal // records what the run changes in the module; nil for none
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
	group      string // its +groupName
	registers  bool   // its own code declares SchemeGroupVersion: no register-gen
}

// generatedClientDirs are the directories under config.out that the
// generators of the clients write to.
var generatedClientDirs = []string{"applyconfiguration", "clientset", "listers", "informers"}

// Files generated into the API packages.
const (
	deepcopyFile = "zz_generated.deepcopy.go"
	registerFile = "zz_generated.register.go"
)

// stage is where a run generates everything before it puts the files in
// place: a temporary directory outside the module. tree mirrors the
// module: the file generated for <module>/<rel> is tree/<rel>.
type stage struct {
	dir  string
	tree string
	// placeholders are the hand-written <type>_expansion.go files of the
	// client directories, as empty files in tree: client-gen and lister-gen
	// leave out the expansion interfaces of the types that have one.
	placeholders map[string]bool
}

// newStage makes the staging directory, a temporary removed on a signal.
func newStage() (*stage, error) {
	dir, err := temps.mkdirTemp("apigen-")
	if err != nil {
		return nil, err
	}
	return &stage{dir: dir, tree: filepath.Join(dir, "tree"), placeholders: map[string]bool{}}, nil
}

// remove removes the staging directory.
func (s *stage) remove() {
	_ = temps.do(s.dir, false, func() error { return os.RemoveAll(s.dir) })
}

// path is where the file for rel (relative to the module root) is staged.
func (s *stage) path(rel string) string { return filepath.Join(s.tree, filepath.FromSlash(rel)) }

// generateAll runs every generator for cfg into a staging directory and,
// unless cfg.verify, then puts the generated files in place of those the
// run owns (see owned). Before that step nothing in the module changes: a
// failed, interrupted or killed run leaves it as it was.
func generateAll(ctx context.Context, cfg config, stdout io.Writer) (err error) {
	mod, err := findModule()
	if err != nil {
		return err
	}
	for _, p := range []*string{&cfg.apis, &cfg.out, &cfg.crdDir, &cfg.rbacDir, &cfg.webhookDir, &cfg.deployDir} {
		if *p == "" {
			continue
		}
		if *p, err = mod.rel(*p); err != nil {
			return err
		}
	}
	if cfg.header != "" {
		// Any readable file: a shared boilerplate may be outside the module.
		if cfg.header, err = filepath.Abs(cfg.header); err != nil {
			return err
		}
		if _, err := os.ReadFile(cfg.header); err != nil {
			return fmt.Errorf("reading the header: %w", err)
		}
	}
	// Without Go output and CRDs, a run makes the roles only, and needs no
	// API packages.
	apiRun := cfg.out != "" || cfg.crdDir != ""
	var pkgs []apiPackage
	var copied, described []string
	if apiRun {
		if pkgs, err = findAPIPackages(mod, cfg.apis); err != nil {
			return err
		}
		if copied, described, err = findTaggedPackages(mod, cfg.apis); err != nil {
			return err
		}
	} else if cfg.rbacDir == "" && cfg.webhookDir == "" {
		return fmt.Errorf("nothing to generate: -out, -crd, -rbac and -webhook are all empty")
	}
	var webhookDirs []string
	if cfg.webhookDir != "" {
		if webhookDirs, err = patternDirs(mod, cfg.webhookPaths); err != nil {
			return fmt.Errorf("-webhook-paths: %w", err)
		}
	}

	copiedDirs := map[string]bool{}
	for _, ip := range copied {
		copiedDirs[strings.TrimPrefix(strings.TrimPrefix(ip, mod.path), "/")] = true
	}
	old, leftovers, err := owned(mod.root, cfg, pkgs, copiedDirs, webhookDirs)
	if err != nil {
		return err
	}
	st, err := newStage()
	if err != nil {
		return err
	}
	defer st.remove()
	if cfg.out != "" {
		if err := st.placeExpansions(mod.root, cfg.out, old); err != nil {
			return err
		}
	}

	// The generators resolve packages relative to the working directory.
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
		header = filepath.Join(st.dir, "header.txt")
		if err := os.WriteFile(header, nil, 0o644); err != nil {
			return err
		}
	}
	if cfg.out != "" {
		if err := generateCode(ctx, mod, st, old, pkgs, copied, described, cfg.out, header); err != nil {
			return err
		}
	}
	var found *webhookMarkers
	var served bool
	var conversions, mutating, validating []string
	var certSecret, service string
	if cfg.crdDir != "" || cfg.rbacDir != "" || cfg.webhookDir != "" {
		overlay, err := st.overlay(mod.root, old, "loads", nil)
		if err != nil {
			return err
		}
		loads, closeLoads, err := newPackageLoads(ctx, mod.root, overlay)
		if err != nil {
			return err
		}
		defer closeLoads()
		if cfg.crdDir != "" {
			checkpoint("crd")
			if err := generateCRDs(loads, cfg.apis, st.path(cfg.crdDir)); err != nil {
				return err
			}
			if cfg.out != "" {
				if err := checkResources(mod.root, pkgs, st.path(cfg.crdDir)); err != nil {
					return err
				}
			}
		}
		if cfg.rbacDir != "" {
			checkpoint("rbac")
			patterns, err := onDisk(mod, cfg.rbacPaths, cfg.out)
			if err != nil {
				return fmt.Errorf("-rbac-paths: %w", err)
			}
			if err := generateRBAC(loads, mod.path, patterns, cfg.rbacRole, st.path(cfg.rbacDir)); err != nil {
				return err
			}
		}
		if cfg.webhookDir != "" {
			checkpoint("webhook")
			patterns, err := onDisk(mod, cfg.webhookPaths, cfg.out)
			if err != nil {
				return fmt.Errorf("-webhook-paths: %w", err)
			}
			var goFile string
			goFile, found, err = generateWebhooks(loads, mod.root, patterns, cfg.rbacRole, cfg.deployNamespace, st.path(cfg.webhookDir), st.tree, header)
			if err != nil {
				return err
			}
			served, mutating, validating = len(found.paths) > 0, found.caMutating(), found.caValidating()
			for _, c := range found.conversions {
				conversions = append(conversions, c.CRD)
			}
			certSecret, service = found.service.name+"-certs", found.service.name
			if !slices.Contains(webhookDirs, path.Dir(goFile)) {
				return fmt.Errorf("the webhook markers are in %s, which the patterns of -webhook-paths do not match as a directory of the module", path.Dir(goFile))
			}
		}
	}
	if cfg.deployDir != "" {
		checkpoint("deploy")
		if err := generateDeploy(mod.root, st, deployment{
			name: cfg.rbacRole, namespace: cfg.deployNamespace, image: cfg.deployImage, dir: cfg.deployDir,
			crdDir: cfg.crdDir, rbacDir: cfg.rbacDir, webhookDir: cfg.webhookDir,
			webhooks: served, conversions: conversions, certSecret: certSecret, service: service, mutating: mutating, validating: validating,
		}); err != nil {
			return err
		}
	}
	if found != nil {
		deployDir := ""
		if cfg.deployDir != "" {
			deployDir = st.path(cfg.deployDir)
		}
		out, err := readWebhookOutput(cfg.rbacRole, st.path(cfg.webhookDir), deployDir, found)
		if err != nil {
			return err
		}
		if cfg.deployDir != "" {
			// What kubectl apply -k installs: with the user's patches.
			if err := applyUserPatches(&out, filepath.Join(mod.root, filepath.FromSlash(cfg.deployDir), patchesDir)); err != nil {
				return err
			}
		}
		if err := checkWebhooks(out); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	generated, err := readTree(st.tree, st.placeholders)
	if err != nil {
		return err
	}
	if err := adoptLegacy(mod.root, cfg, old, generated); err != nil {
		return err
	}
	if c := collisions(mod.root, old, generated); len(c) > 0 {
		return fmt.Errorf("apigen generates files where the module holds files it did not generate (without the \"Code generated ... DO NOT EDIT.\" line); move them away:\n  %s",
			strings.Join(c, "\n  "))
	}
	if cfg.verify {
		if diff := old.diff(generated); len(diff) > 0 {
			return &staleError{files: diff}
		}
		_, _ = fmt.Fprintf(stdout, "apigen: %d generated files are up to date\n", len(generated))
		return nil
	}
	written, err := commit(mod.root, cfg, old, generated, leftovers)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "apigen: %d files generated, %d written", len(generated), written)
	if len(pkgs) > 0 {
		_, _ = fmt.Fprintf(stdout, " for %s", strings.Join(groupVersions(pkgs), " "))
	}
	_, _ = fmt.Fprintln(stdout)
	return nil
}

// placeExpansions stages an empty file for each hand-written
// <type>_expansion.go in the client directories under out.
func (s *stage) placeExpansions(root, out string, old files) error {
	for _, d := range generatedClientDirs {
		err := filepath.WalkDir(filepath.Join(root, out, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(e.Name(), "_expansion.go") {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if _, ok := old[rel]; ok {
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(s.path(rel)), 0o755); err != nil {
				return err
			}
			s.placeholders[rel] = true
			return os.WriteFile(s.path(rel), nil, 0o644)
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// overlay writes a file for the go command's -overlay flag, named name in
// the staging directory, that shows the module as the run would leave it:
// the staged Go files in place of the module's, the owned Go files not
// generated again gone, and the files of extra (absolute paths in the
// module to staged files) added.
func (s *stage) overlay(root string, old files, name string, extra map[string]string) (string, error) {
	replace := map[string]string{}
	for rel := range old {
		if strings.HasSuffix(rel, ".go") {
			replace[filepath.Join(root, filepath.FromSlash(rel))] = ""
		}
	}
	err := filepath.WalkDir(s.tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		rel, err := filepath.Rel(s.tree, p)
		if err != nil {
			return err
		}
		if s.placeholders[filepath.ToSlash(rel)] {
			return nil
		}
		replace[filepath.Join(root, rel)] = p
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	maps.Copy(replace, extra)
	data, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		return "", err
	}
	file := filepath.Join(s.dir, name+"-overlay.json")
	return file, os.WriteFile(file, data, 0o644)
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
			if reason := unimportable(g.Name()); reason != "" {
				return nil, fmt.Errorf("package %s: its group directory %q names the generated clients', listers' and informers' group packages too, and %s: rename the directory", dir, g.Name(), reason)
			}
			if tags["k8s:openapi-gen"] != "true" {
				return nil, fmt.Errorf("package %s: its package comment needs the line \"+k8s:openapi-gen=true\" (the OpenAPI schema makes the fake clientset and server-side apply work for its types)", dir)
			}
			registers, err := declaresScheme(filepath.Join(mod.root, dir))
			if err != nil {
				return nil, err
			}
			pkgs = append(pkgs, apiPackage{dir: dir, importPath: mod.importPath(dir), groupVer: g.Name() + "/" + v.Name(), group: tags["groupName"], registers: registers})
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no API package under %s: expected <group>/<version> directories whose package comment has \"+groupName=<group>\"", apis)
	}
	slices.SortFunc(pkgs, func(a, b apiPackage) int { return strings.Compare(a.dir, b.dir) })
	return pkgs, nil
}

// findTaggedPackages lists the import paths of the packages in and under
// apis whose Go files ask for deep copies ("+k8s:deepcopy-gen", of the
// package or of a type) and of those whose package comment has
// "+k8s:openapi-gen=true": shared types the API packages import need both
// as much as the API packages do.
func findTaggedPackages(mod module, apis string) (copied, described []string, err error) {
	err = filepath.WalkDir(filepath.Join(mod.root, apis), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != filepath.Join(mod.root, apis) && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		wantsCopies := false
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated.") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(p, n))
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte("+k8s:deepcopy-gen")) {
				wantsCopies = true
				break
			}
		}
		rel, err := filepath.Rel(mod.root, p)
		if err != nil {
			return err
		}
		if err := checkDocTags(p, filepath.ToSlash(rel)); err != nil {
			return err
		}
		ip := mod.importPath(filepath.ToSlash(rel))
		if wantsCopies {
			copied = append(copied, ip)
		}
		tags, err := packageTags(p)
		if err != nil {
			return err
		}
		if tags["k8s:openapi-gen"] == "true" {
			described = append(described, ip)
		}
		return nil
	})
	return copied, described, err
}

// onDisk turns the package patterns that end in "..." into the
// directories they match (see patternDirs) that hold Go files on disk,
// as "./dir" patterns, leaving out the generated client packages under
// out: the controller-tools generators read the files of the packages
// they are given from disk, and those of the packages a run generates
// exist only in the go command's overlay until the run puts them in
// place (on a run before the first, not at all). Other patterns stay as
// they are.
func onDisk(mod module, patterns []string, out string) ([]string, error) {
	var expanded []string
	for _, p := range patterns {
		if !strings.HasSuffix(p, "...") {
			expanded = append(expanded, p)
			continue
		}
		dirs, err := patternDirs(mod, []string{p})
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			if out != "" && slices.ContainsFunc(generatedClientDirs, func(c string) bool {
				g := path.Join(out, c)
				return d == g || strings.HasPrefix(d, g+"/")
			}) {
				continue
			}
			// As the go command matches packages: by the files its build
			// takes (not a directory of tests only, or of a tools.go
			// behind a build tag).
			p, err := build.Default.ImportDir(filepath.Join(mod.root, filepath.FromSlash(d)), 0)
			var noGo *build.NoGoError
			if err != nil && !errors.As(err, &noGo) {
				return nil, err
			}
			if err == nil && len(p.GoFiles)+len(p.CgoFiles) > 0 {
				expanded = append(expanded, "./"+path.Clean(d))
			}
		}
	}
	if len(expanded) == 0 && len(patterns) > 0 {
		return nil, fmt.Errorf("%q match no package with Go files", patterns)
	}
	return expanded, nil
}
