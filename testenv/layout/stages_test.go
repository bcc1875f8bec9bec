package layout

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// stagesMakefile stands in for the repository's Makefile: stages that pass,
// one whose recipe fails (make then exits 2), and one that burns some CPU.
const stagesMakefile = `a:
	@echo out of a
b:
	@echo out of b
c:
	@echo out of c
fails:
	@echo failing; exit 3
busy:
	@i=0; while [ $$i -lt 300000 ]; do i=$$((i+1)); done; echo busy done
`

// runStages runs hack/test-stages.sh with steps in a copy of the
// repository's hack folder beside stagesMakefile, then hack/test-times.sh,
// and returns the stage lines, the exit code and both outputs.
func runStages(t *testing.T, steps ...string) (lines [][]string, code int, out, table string) {
	t.Helper()
	root, err := repo.Root()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "hack"), 0o755))
	for _, script := range []string{"test-stages.sh", "test-times.sh"} {
		data, err := os.ReadFile(filepath.Join(root, "hack", script))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hack", script), data, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Makefile"), []byte(stagesMakefile), 0o644))

	cmd := exec.Command("bash", append([]string{"hack/test-stages.sh"}, steps...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MAKE=make", "MAKEFLAGS=", "MAKELEVEL=")
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err, "%s", output)
	}
	tsv, err := os.ReadFile(filepath.Join(dir, "_output", "test-times.tsv"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n") {
		if line != "" {
			lines = append(lines, strings.Split(line, "\t"))
		}
	}
	for _, l := range lines {
		log, err := os.ReadFile(filepath.Join(dir, "_output", "test-"+l[0]+".log"))
		require.NoError(t, err, "the log of %s", l[0])
		assert.NotEmpty(t, log, "the log of %s", l[0])
	}
	times := exec.Command("bash", "hack/test-times.sh")
	times.Dir = dir
	tableOut, err := times.CombinedOutput()
	require.NoError(t, err, "%s", tableOut)
	return lines, code, string(output), string(tableOut)
}

// column returns one field of every stage line: 0 the stage, 1 its wall
// seconds, 2 its exit code, 3 its CPU seconds, 4 its step.
func column(t *testing.T, lines [][]string, i int) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		require.Len(t, l, 5, "fields of %q", l)
		out = append(out, l[i])
	}
	return out
}

// make test's steps: each stage's output is kept and shown, its line
// recorded; stages joined by + run side by side; the first failing step
// ends the run with its exit code, after every stage of its group ended.
func TestMakeTestStages(t *testing.T) {
	_, err := exec.LookPath("make")
	require.NoError(t, err, "make is one of the four things the repository needs")
	t.Run("steps in order, a group side by side", func(t *testing.T) {
		lines, code, out, table := runStages(t, "a", "b+busy+c", "c")
		assert.Equal(t, 0, code, out)
		require.Len(t, lines, 5)
		assert.Equal(t, "a", lines[0][0])
		assert.ElementsMatch(t, []string{"b", "busy", "c"}, []string{lines[1][0], lines[2][0], lines[3][0]})
		assert.Equal(t, "c", lines[4][0])
		assert.Equal(t, []string{"1", "2", "2", "2", "3"}, column(t, lines, 4), "step numbers")
		assert.Equal(t, []string{"0", "0", "0", "0", "0"}, column(t, lines, 2), "exit codes")
		for _, l := range lines {
			assert.Regexp(t, `^[0-9]+$`, l[1], "wall seconds of %s", l[0])
			assert.Regexp(t, `^[0-9]+\.[0-9]$`, l[3], "CPU seconds of %s", l[0])
			if l[0] == "busy" {
				assert.NotEqual(t, "0.0", l[3], "the CPU time of a stage that kept a core busy")
			}
		}
		for _, want := range []string{"out of a", "out of b", "busy done", "== side by side: b busy c", "== make busy: ok"} {
			assert.Contains(t, out, want)
		}
		assert.Contains(t, table, "| busy")
		assert.Contains(t, table, "  a ")
		assert.Contains(t, table, "total")
	})
	t.Run("a failed step ends the run", func(t *testing.T) {
		lines, code, out, table := runStages(t, "a", "fails+b", "c")
		assert.Equal(t, 2, code, out)
		assert.ElementsMatch(t, []string{"a", "fails", "b"}, column(t, lines, 0), "c never runs")
		for _, l := range lines {
			want := "0"
			if l[0] == "fails" {
				want = "2"
			}
			assert.Equal(t, want, l[2], "exit code of %s", l[0])
		}
		assert.Contains(t, out, "== make fails: FAILED (exit 2)")
		assert.Contains(t, table, "FAILED (exit 2)")
	})
	t.Run("a failed lone stage", func(t *testing.T) {
		lines, code, _, _ := runStages(t, "fails", "a")
		assert.Equal(t, 2, code)
		assert.Equal(t, []string{"fails"}, column(t, lines, 0))
	})
}
