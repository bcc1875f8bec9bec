package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/markers"
	"sigs.k8s.io/controller-tools/pkg/rbac"
)

// generateCRDs writes a CustomResourceDefinition (apiextensions.k8s.io/v1)
// for every root type of the API packages under apis into dir, as
// controller-gen's crd generator does, each marked with crdMarker(apis).
func generateCRDs(loads *packageLoads, apis, dir string) error {
	if err := controllerGen(loads, "crd", crd.Generator{}, []string{"./" + apis + "/..."}, dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	found := false
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte("\nkind: CustomResourceDefinition\n")) {
			continue
		}
		found = true
		// controller-gen stamps the version of the program it runs in;
		// what made the manifest is controller-tools.
		stamped := markYAMLWith(versionAnnotation.ReplaceAll(data, []byte("${1}"+controllerToolsVersion())), crdMarker(apis))
		if err := os.WriteFile(p, stamped, 0o644); err != nil {
			return err
		}
	}
	if found {
		return nil
	}
	return fmt.Errorf("no CustomResourceDefinition generated from %s: a resource type embeds metav1.TypeMeta and metav1.ObjectMeta", apis)
}

var versionAnnotation = regexp.MustCompile(`(?m)^(\s*controller-gen\.kubebuilder\.io/version: ).*$`)

// controllerToolsVersion is the version of sigs.k8s.io/controller-tools
// built into this program.
func controllerToolsVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/controller-tools" {
				if dep.Replace != nil {
					dep = dep.Replace
				}
				return dep.Version
			}
		}
	}
	return "(unknown)"
}

// generateRBAC writes role.yaml into dir, marked with yamlMarker: a
// ClusterRole named role with the rules of the +kubebuilder:rbac markers
// without a namespace, and a Role of that name in each namespace the other
// markers name.
func generateRBAC(loads *packageLoads, modPath string, paths []string, role, dir string) error {
	if len(paths) == 0 {
		return fmt.Errorf("-rbac needs at least one package pattern in -rbac-paths")
	}
	library, err := libraryRBAC(loads, modPath, paths)
	if err != nil {
		return err
	}
	if err := controllerGen(loads, "rbac:roleName="+role, rbac.Generator{RoleName: role}, append(slices.Clone(paths), library...), dir); err != nil {
		return err
	}
	p := filepath.Join(dir, "role.yaml")
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(p, markYAML(data), 0o644)
}

// libraryModule is the module of the library's blocks.
const libraryModule = "github.com/ctrlkit/ctrlkit"

// libraryRBAC returns the import paths of the library's packages (module
// libraryModule, when modPath, the module apigen runs in, is not it) that
// the packages of patterns import, directly or not, and whose files carry
// +kubebuilder:rbac markers: what a block needs of the API server (the
// CustomResourceDefinitions informer/optional reads, say) reaches the
// operator's roles through the block's own markers. The library counts
// wherever it comes from: the module cache, a replace directive, or
// another module of the go.work workspace (a main module there too).
// Packages that do not load (a new module's, before its first go mod
// tidy) add nothing, and the rbac generator reports their errors; when
// the go command itself fails, its error is returned.
func libraryRBAC(loads *packageLoads, modPath string, patterns []string) ([]string, error) {
	if modPath == libraryModule {
		return nil, nil
	}
	cfg := loads.forPatterns(patterns).config()
	cfg.Mode = packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("finding the library packages whose RBAC markers the operator needs: %w", err)
	}
	var found []string
	var readErr error
	packages.Visit(roots, nil, func(p *packages.Package) {
		if p.Module == nil || p.Module.Path != libraryModule || p.Name == "main" {
			return
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				readErr = errors.Join(readErr, err)
				return
			}
			if rbacMarker.Match(data) {
				found = append(found, p.PkgPath)
				return
			}
		}
	})
	slices.Sort(found)
	return slices.Compact(found), readErr
}

// rbacMarker matches a line with a +kubebuilder:rbac marker.
var rbacMarker = regexp.MustCompile(`(?m)^\s*//\s*\+kubebuilder:rbac:`)

// controllerGen runs gen, a controller-tools generator, on the packages of
// patterns as controller-gen runs the generator option spec (its name and
// required arguments, such as "rbac:roleName=x"), writing into dir.
func controllerGen(loads *packageLoads, spec string, gen genall.Generator, patterns []string, dir string) error {
	name, _, _ := strings.Cut(spec, ":")
	reg := &markers.Registry{}
	defs := []*markers.Definition{
		markers.Must(markers.MakeDefinition(name, markers.DescribesPackage, gen)),
		markers.Must(markers.MakeDefinition("output:"+name+":dir", markers.DescribesPackage, genall.OutputToDirectory(""))),
	}
	for _, d := range defs {
		if err := reg.Register(d); err != nil {
			return err
		}
	}
	if err := genall.RegisterOptionsMarkers(reg); err != nil {
		return err
	}
	options := []string{spec, "paths=" + strings.Join(patterns, ";"), "output:" + name + ":dir=" + dir}
	rt, err := genall.FromOptionsWithConfig(loads.forPatterns(patterns).config(), reg, options)
	if err != nil {
		return fmt.Errorf("controller-gen %s: %w", name, err)
	}
	// The options made a zero generator of gen's type: run gen itself,
	// with its settings (and, for some, where it keeps what it found).
	*rt.Generators[0] = gen
	var errs bytes.Buffer
	rt.ErrorWriter = &errs
	return guard("controller-gen "+name, func() error {
		if failed := rt.Run(); failed {
			if msg := strings.TrimSpace(errs.String()); msg != "" {
				return fmt.Errorf("reported errors:\n%s", msg)
			}
			// Errors loading the packages go to standard error.
			return errors.New("the packages did not load (see the errors above)")
		}
		return nil
	})
}
