// Package repo locates this repository's checkout for the commands and tests
// that need its files (CRDs, examples, the README): the testenv module
// directory and the ctrlkit module root above it.
package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// testenvModule is the module path whose go.mod marks the testenv directory.
const testenvModule = "github.com/ctrlkit/ctrlkit/testenv"

// TestenvDir finds the testenv directory: from this package's compiled-in
// source location if it still exists, else by walking up from the working
// directory.
func TestenvDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "..")
		if isTestenvDir(dir) {
			return filepath.Clean(dir), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locating testenv: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isTestenvDir(dir) {
			return dir, nil
		}
		if isTestenvDir(filepath.Join(dir, "testenv")) {
			return filepath.Join(dir, "testenv"), nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return "", errors.New("locating testenv: not found from the working directory")
}

// Root returns the root of the ctrlkit repository: the directory above
// TestenvDir, whose go.mod declares github.com/ctrlkit/ctrlkit.
func Root() (string, error) {
	src, err := TestenvDir()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(src)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(data), "module github.com/ctrlkit/ctrlkit\n") {
		return "", fmt.Errorf("locating the ctrlkit repository: %s is not its root", root)
	}
	return root, nil
}

func isTestenvDir(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == testenvModule
		}
	}
	return false
}
