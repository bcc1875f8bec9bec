package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// packageLoads makes the configurations with which the controller-gen
// generators load the module's packages.
//
// Those packages import the code the run has just generated, and so may
// need modules the module's go.mod does not require yet: a new module's
// go.mod is tidied after apigen's first run, once the generated packages
// its controllers import exist. The loads therefore resolve against a copy
// of go.mod and go.sum that the go command may complete, and the module's
// own files stay as they are. In workspace mode, or with a vendor
// directory, they use the module's files as they are.
//
// In workspace mode the loads use the workspace first; where its modules
// lack a requirement the packages need (a new module's, before its first
// go mod tidy), they load outside the workspace (GOWORK=off) against the
// copies instead, as the OpenAPI schema's build does.
type packageLoads struct {
	buildFlags []string      // of the go command: those of goModCopy, or none
	env        []string      // added to the go command's environment
	fallback   *packageLoads // in workspace mode, the loads outside the workspace
	// ctx is the run's: it ends the go commands of the loads. (The
	// controller-tools generators take a configuration, not a context.)
	ctx context.Context
}

// newPackageLoads prepares the loads of the module in root; overlay, if
// not empty, is a file for the go command's -overlay flag (the generated
// packages the loaded ones import are in it). close removes the copies.
func newPackageLoads(ctx context.Context, root, overlay string) (loads *packageLoads, close func(), err error) {
	loads = &packageLoads{ctx: ctx}
	if overlay != "" {
		loads.buildFlags = []string{"-overlay=" + overlay}
	}
	close = func() {}
	if _, err := os.Stat(filepath.Join(root, "vendor", "modules.txt")); err == nil {
		return loads, close, nil
	}
	workspace, err := inWorkspace(ctx, root)
	if err != nil {
		return nil, nil, err
	}
	flags, cleanup, err := goModCopy(root)
	if err != nil {
		return nil, nil, err
	}
	if workspace {
		loads.fallback = &packageLoads{buildFlags: slices.Concat(loads.buildFlags, flags), env: []string{"GOWORK=off"}, ctx: ctx}
		return loads, cleanup, nil
	}
	loads.buildFlags = append(loads.buildFlags, flags...)
	return loads, cleanup, nil
}

// forPatterns returns the loads for the packages of patterns: in
// workspace mode, those outside the workspace if the workspace cannot
// resolve an import of the packages (see unresolvedImport), saying so on
// stderr; any other error of the load is left to the generators, which
// report it.
func (l *packageLoads) forPatterns(patterns []string) *packageLoads {
	if l.fallback == nil {
		return l
	}
	cfg := l.config()
	cfg.Mode = packages.NeedName | packages.NeedImports | packages.NeedDeps
	pkgs, err := packages.Load(cfg, patterns...)
	why := ""
	if err != nil {
		why = unresolvedImport(err.Error())
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			if why == "" && e.Kind == packages.ListError {
				why = unresolvedImport(e.Msg)
			}
		}
	})
	if why == "" {
		return l
	}
	_, _ = fmt.Fprintf(os.Stderr, "apigen: the workspace cannot resolve an import of the module's packages (%s): loading them outside the workspace (GOWORK=off), against a copy of the module's go.mod\n", why)
	return l.fallback
}

// unresolvedImport returns the line of msg, an error of the go command,
// that says the build list provides no module for an imported package
// (as in a workspace whose modules lack a requirement of the module's
// imports of generated or library packages, before the module's first go
// mod tidy), or "" if there is none.
func unresolvedImport(msg string) string {
	for _, line := range strings.Split(msg, "\n") {
		for _, s := range []string{"no required module provides package", "cannot find module providing package", "from implicitly required module", "missing go.sum entry"} {
			if strings.Contains(line, s) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

// inWorkspace tells whether the go command works in workspace mode in root.
func inWorkspace(ctx context.Context, root string) (bool, error) {
	w, err := goWorkFile(ctx, root)
	return w != "", err
}

// goWorkFile returns the go.work file of the workspace the go command
// works in, in root, or "" outside workspace mode.
func goWorkFile(ctx context.Context, root string) (string, error) {
	goEnv := command(ctx, "go", "env", "GOWORK")
	goEnv.Dir = root
	var gowork, stderr bytes.Buffer
	goEnv.Stdout, goEnv.Stderr = &gowork, &stderr
	if err := runCommand(goEnv); err != nil {
		return "", fmt.Errorf("go env GOWORK: %w\n%s", err, stderr.String())
	}
	if w := strings.TrimSpace(gowork.String()); w != "off" {
		return w, nil
	}
	return "", nil
}

// goModCopy copies the go.mod and go.sum of the module in root to a
// temporary directory, and returns the go command's flags that build the
// module against the copies, completing them as needed (-mod=mod), and the
// function that removes them.
func goModCopy(root string) (flags []string, cleanup func(), err error) {
	// A temporary of the run, so that a signal removes it too.
	dir, err := temps.mkdirTemp("apigen-gomod")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { _ = temps.do(dir, false, func() error { return os.RemoveAll(dir) }) }
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) && name == "go.sum" {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		if err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	return []string{"-mod=mod", "-modfile=" + filepath.Join(dir, "go.mod")}, cleanup, nil
}

// config is a fresh configuration for one load.
func (l *packageLoads) config() *packages.Config {
	cfg := &packages.Config{Context: l.ctx, BuildFlags: slices.Clone(l.buildFlags)}
	if len(l.env) > 0 {
		cfg.Env = append(os.Environ(), l.env...)
	}
	return cfg
}
