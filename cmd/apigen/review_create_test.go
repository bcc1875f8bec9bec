package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTry runs the go command in dir and returns its output and error.
func goTry(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// An API package that registers its types itself (its own register.go
// declaring SchemeGroupVersion and addKnownTypes, as examples/bucket's
// do and apigen supports: register-gen then does not run for it) gets a
// new kind from apigen create api. The kind's types file has no
// registration, and create neither adds it to addKnownTypes nor says to:
// the generated clientset's scheme lacks Gadget, so the created
// controller test fails (the fake cannot store a Gadget: no kind is
// registered for the type) and so would the operator's informer. It
// should pass: create should add the kind to the package's registration
// (or refuse, or print the line to add).
func TestReviewNewKindInSelfRegisteringPackageIsRegistered(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
	v1 := filepath.Join(dir, "apis/example/v1")
	gen := filepath.Join(v1, "zz_generated.register.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	b = regexp.MustCompile(`(?m)^// Code generated .*\n`).ReplaceAll(b, nil)
	require.NoError(t, os.WriteFile(filepath.Join(v1, "register.go"), b, 0o644))
	require.NoError(t, os.Remove(gen))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 0, code, "create api\nstdout: %s\nstderr: %s", stdout, stderr)
	out, err := goTry(t, dir, "test", "-count=1", "-run", "TestGadgetController", ".")
	assert.NoError(t, err, "go test of the created kind's controller:\n%s", out)
}

// A new kind named like a function that register-gen declares in its API
// package (Resource, Kind: zz_generated.register.go has func
// Resource(string) schema.GroupResource and func Kind) is not refused
// before anything is written, as a kind whose name a type of the package
// has is ("Bad input ... is refused before anything is written"): create
// writes, generates and fails later. It should be refused up front,
// naming the clash, with nothing written.
func TestReviewNewKindNamedLikeRegisterFunc(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
	before := tree(t, dir)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Resource")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.NotContains(t, stdout, "apigen create: wrote", "refused before anything is written")
	assert.Contains(t, stderr, "register", "the error names the clash with the generated register:\n%s", stderr)
}
