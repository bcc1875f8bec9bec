package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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
type packageLoads struct {
	buildFlags []string // of the go command: those of goModCopy, or none
}

// newPackageLoads prepares the loads of the module in root; overlay, if
// not empty, is a file for the go command's -overlay flag (the generated
// packages the loaded ones import are in it). close removes the copies.
func newPackageLoads(ctx context.Context, root, overlay string) (loads *packageLoads, close func(), err error) {
	loads = &packageLoads{}
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
	if workspace {
		return loads, close, nil
	}
	flags, cleanup, err := goModCopy(root)
	if err != nil {
		return nil, nil, err
	}
	loads.buildFlags = append(loads.buildFlags, flags...)
	return loads, cleanup, nil
}

// inWorkspace tells whether the go command works in workspace mode in root.
func inWorkspace(ctx context.Context, root string) (bool, error) {
	goEnv := exec.CommandContext(ctx, "go", "env", "GOWORK")
	goEnv.Dir = root
	gowork, err := goEnv.Output()
	if err != nil {
		return false, fmt.Errorf("go env GOWORK: %w", err)
	}
	w := strings.TrimSpace(string(gowork))
	return w != "" && w != "off", nil
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
	return &packages.Config{BuildFlags: slices.Clone(l.buildFlags)}
}
