// Package layout checks the repository's layout: which folder may import
// which, and that every top-level folder says what it is for.
package layout

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

const module = "github.com/ctrlkit/ctrlkit"

// The folders beside the library: no library package imports them.
var besideTheLibrary = []string{module + "/testenv", module + "/cmd", module + "/hack"}

// deps lists each package of the module in dir (tests included) with every
// package it imports, directly or not.
func deps(t *testing.T, dir string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-test", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list in %s: %s", dir, stderr.String())
	pkgs := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs[fields[0]] = fields[1:]
	}
	return pkgs
}

func within(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestLibraryImportsNothingBesideIt checks that no package of the root
// module but hack's own imports testenv, cmd or hack, and that the root
// go.mod requires neither nested module.
func TestLibraryImportsNothingBesideIt(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	pkgs := deps(t, root)
	require.Contains(t, pkgs, module+"/queue", "the root module's packages were not listed")
	for pkg, imported := range pkgs {
		if within(strings.Fields(pkg)[0], module+"/hack") {
			continue
		}
		for _, dep := range imported {
			for _, beside := range besideTheLibrary {
				assert.False(t, within(dep, beside), "%s imports %s", pkg, dep)
			}
		}
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	for _, nested := range []string{module + "/testenv", module + "/cmd"} {
		assert.NotContains(t, string(gomod), nested+" ", "the root go.mod requires %s", nested)
	}
}

// TestToolsImportNothingOfTheRepository checks that the cmd module stands
// alone: its commands are added to other modules as tools, and import
// neither the library nor the test environment.
func TestToolsImportNothingOfTheRepository(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	pkgs := deps(t, filepath.Join(root, "cmd"))
	require.Contains(t, pkgs, module+"/cmd/apigen", "the cmd module's packages were not listed")
	for pkg, imported := range pkgs {
		for _, dep := range imported {
			if within(dep, module) {
				assert.True(t, within(dep, module+"/cmd"), "%s imports %s", pkg, dep)
			}
		}
	}
}

// TestFoldersSayWhatTheyAreFor checks that every top-level folder has a
// README or a package doc.
func TestFoldersSayWhatTheyAreFor(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	checked := 0
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		checked++
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		documented := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			documented = documented || !strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`(?m)^// Package `+e.Name()+` `).Match(src)
		}
		assert.True(t, documented, "%s has neither a README.md nor a package doc", e.Name())
	}
	assert.GreaterOrEqual(t, checked, 12, "top-level folders")
}

// goroutinesOfTheTools are the files of the cmd module allowed a go
// statement, and why the module's tests still need no race detector.
var goroutinesOfTheTools = map[string]string{
	// The signal handler reads the list of temporaries under the mutex
	// every other access holds, calls a context's cancel, and exits the
	// process: nothing it shares is reached without that mutex.
	"cmd/apigen/stop.go": "apigen's signal handler",
	// The test's goroutine stands in for the signal handler's: it only
	// calls removeStale, which takes the temporaries' mutex, and hands
	// its result back over a channel.
	"cmd/apigen/files_test.go": "the test of stale removal under the signal handler's lock",
}

// TestToolsStartNoGoroutines checks what lets make test run the cmd
// module's tests without the race detector: no Go file has a go statement
// but those of goroutinesOfTheTools. A new one must be looked at: run its
// package's tests with -race, or add it here with the reason it needs no
// race detector.
func TestToolsStartNoGoroutines(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	checked := 0
	err = filepath.WalkDir(filepath.Join(root, "cmd"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if _, allowed := goroutinesOfTheTools[filepath.ToSlash(rel)]; allowed {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s starts a goroutine: make test-cmd must then run with -race", fset.Position(g.Pos()))
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, checked)
	for file := range goroutinesOfTheTools {
		assert.FileExists(t, filepath.Join(root, filepath.FromSlash(file)), "an allowed file that no longer exists")
	}
}
