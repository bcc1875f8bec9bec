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

// newPackageLoads prepares the loads of the module in root. close removes
// the copies.
func newPackageLoads(ctx context.Context, root string) (loads *packageLoads, close func(), err error) {
	loads = &packageLoads{}
	close = func() {}
	if _, err := os.Stat(filepath.Join(root, "vendor", "modules.txt")); err == nil {
		return loads, close, nil
	}
	goEnv := exec.CommandContext(ctx, "go", "env", "GOWORK")
	goEnv.Dir = root
	gowork, err := goEnv.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go env GOWORK: %w", err)
	}
	if w := strings.TrimSpace(string(gowork)); w != "" && w != "off" {
		return loads, close, nil
	}
	flags, cleanup, err := goModCopy(root)
	if err != nil {
		return nil, nil, err
	}
	loads.buildFlags = flags
	return loads, cleanup, nil
}

// goModCopy copies the go.mod and go.sum of the module in root to a
// temporary directory, and returns the go command's flags that build the
// module against the copies, completing them as needed (-mod=mod), and the
// function that removes them.
func goModCopy(root string) (flags []string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "apigen-gomod")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
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
