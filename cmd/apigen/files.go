package main

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// packageTags returns the "+name=value" lines of the comments above the
// package clause of the non-test Go files in dir.
func packageTags(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, group := range f.Comments {
			if group.End() >= f.Package {
				break
			}
			for _, line := range strings.Split(group.Text(), "\n") {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "+") {
					continue
				}
				name, value, _ := strings.Cut(line[1:], "=")
				tags[name] = value
			}
		}
	}
	return tags, nil
}

// declaresScheme tells whether a Go file of dir other than the generated
// ones declares SchemeGroupVersion: then the package registers its types
// itself, and register-gen must not.
func declaresScheme(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				if v, ok := s.(*ast.ValueSpec); ok && slices.ContainsFunc(v.Names, func(n *ast.Ident) bool { return n.Name == "SchemeGroupVersion" }) {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// files is the content of the generated files of one run, by path relative
// to the module root (slash-separated).
type files map[string][]byte

// snapshot reads every file a run of cfg owns: deep-copy files under the API
// directory, everything in the generated client directories, the CRD
// manifests in the CRD directory and role.yaml in the RBAC directory. Other
// files in those directories (a kustomization.yaml, Go code that embeds the
// manifests) are not the run's and are left alone.
func snapshot(root string, cfg config) (files, error) {
	out := files{}
	add := func(dir string, owned func(rel string, data []byte) bool) error {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if owned(rel, data) {
				out[rel] = data
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if cfg.out != "" {
		if err := add(cfg.apis, func(rel string, _ []byte) bool {
			return path.Base(rel) == deepcopyFile || path.Base(rel) == registerFile
		}); err != nil {
			return nil, err
		}
		for _, d := range generatedClientDirs {
			if err := add(path.Join(cfg.out, d), func(string, []byte) bool { return true }); err != nil {
				return nil, err
			}
		}
	}
	if cfg.crdDir != "" {
		err := add(cfg.crdDir, func(rel string, data []byte) bool {
			return path.Dir(rel) == path.Clean(cfg.crdDir) && strings.HasSuffix(rel, ".yaml") &&
				bytes.Contains(data, []byte("\nkind: CustomResourceDefinition\n"))
		})
		if err != nil {
			return nil, err
		}
	}
	if cfg.rbacDir != "" {
		role := path.Join(cfg.rbacDir, "role.yaml")
		if err := add(cfg.rbacDir, func(rel string, _ []byte) bool { return rel == role }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// remove deletes the files of s. Directories stay: the generators write
// into them again, and restoreOver removes those a failed run left empty.
func (s files) remove(root string) error {
	for rel := range s {
		if err := os.Remove(filepath.Join(root, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// restoreOver puts s back in place of whatever a run of cfg left.
func (s files) restoreOver(root string, cfg config) error {
	now, err := snapshot(root, cfg)
	if err != nil {
		return err
	}
	if err := now.remove(root); err != nil {
		return err
	}
	if cfg.out != "" {
		for _, d := range generatedClientDirs {
			removeEmptyDirs(filepath.Join(root, cfg.out, d))
		}
	}
	for rel, data := range s {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// absentDirs lists, deepest first, the directories a run of cfg writes into
// (and those above them in the module) that do not exist yet.
func absentDirs(root string, cfg config) []string {
	var dirs []string
	for _, d := range []string{cfg.out, cfg.crdDir, cfg.rbacDir} {
		for d != "" && d != "." && d != "/" {
			if _, err := os.Stat(filepath.Join(root, d)); err != nil && !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
			d = path.Dir(d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// removeIfEmpty removes those of dirs, relative to root, that hold nothing,
// in order.
func removeIfEmpty(root string, dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(filepath.Join(root, d)) // fails, as it should, unless empty
	}
}

// removeEmptyDirs removes dir and its subdirectories that hold no file.
func removeEmptyDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir) // fails, as it should, while files remain
}

// diff lists the paths whose content differs between s and other, sorted,
// each with "changed", "added" (only in other) or "removed" (only in s).
func (s files) diff(other files) []string {
	var out []string
	for rel, data := range s {
		o, ok := other[rel]
		switch {
		case !ok:
			out = append(out, "removed: "+rel)
		case !bytes.Equal(o, data):
			out = append(out, "changed: "+rel)
		}
	}
	for rel := range other {
		if _, ok := s[rel]; !ok {
			out = append(out, "added:   "+rel)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(a[9:], b[9:]) })
	return out
}
