package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// create builds the packages it wrote to with their tests, as go test
// ./... and go vet ./... will: a test file that does not compile (a
// scaffolded test that does not fit the user's kind) fails create, which
// then undoes, with the compiler's message; a package without tests
// is compiled too. The build writes nothing into the module and runs
// nothing.
func TestCreateBuildsTheTestsOfWhatItWrote(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.26.0\n",
		"main.go":      "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { lib.Hello() }\n",
		"main_test.go": "package main\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { _ = os.WriteFile(\"ran\", nil, 0o644); os.Exit(m.Run()) }\n\nfunc TestHello(t *testing.T) {}\n",
		"lib/lib.go":   "package lib\n\n// Hello says nothing.\nfunc Hello() {}\n",
	}
	dir := t.TempDir()
	for rel, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
	}
	before := tree(t, dir)
	require.NoError(t, buildWithTests(t.Context(), dir, []string{"./", "./lib"}))
	assert.Equal(t, before, tree(t, dir), "nothing written, no test run")

	for rel, want := range map[string]string{
		"main_test.go": "main_test.go:12:",
		"lib/lib.go":   "lib.go:6:",
	} {
		t.Run(rel, func(t *testing.T) {
			dir := t.TempDir()
			for rel, text := range files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
			}
			f := filepath.Join(dir, filepath.FromSlash(rel))
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, append(b, "\nvar broken int = \"not an int\"\n"...), 0o644))
			before := tree(t, dir)
			err = buildWithTests(t.Context(), dir, []string{"./", "./lib"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), want, "the compiler's message, at the broken line")
			assert.Contains(t, err.Error(), "cannot use \"not an int\"", "the compiler's message")
			assert.Equal(t, before, tree(t, dir), "nothing written")
		})
	}
}
