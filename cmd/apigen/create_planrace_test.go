package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// create plans its edits from what main.go and generate.go held when it
// read them; a change the user saves before it writes them (while it
// loads the API's packages) is not written over: create refuses, writing
// nothing, and says to run it again.
func TestCreateRefusesFilesChangedSinceItsPlan(t *testing.T) {
	for _, rel := range []string{"main.go", "generate.go"} {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			op, dir := plannedOperator(t, nil)
			p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
			require.NoError(t, err)
			require.NotEqual(t, op.genArgs, p.genArgs, "the plan changes generate.go's line")
			saved := []byte("\n// The user's, saved while create planned.\n")
			f, err := os.OpenFile(filepath.Join(dir, rel), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write(saved)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			before := snapshot(t, dir)

			err = p.apply(t.Context(), op, &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), rel+" changed while apigen create read the module")
			assert.Equal(t, before, snapshot(t, dir), "nothing written")
		})
	}
}

// A new file of create's plan that the module has by the time create
// writes (the user saved one of that name while create loaded the API's
// packages, or a second create ran) is not written over, nor removed by
// an undo: create refuses, as it does at planning time ("the module
// already has webhooks.go"), writing nothing, and the user's file stays
// as they saved it.
//
// (The plan is applied in a directory without go.mod: were its files
// written, generating would fail at once and the undo would run.)
func TestCreateKeepsNewFileSavedSinceItsPlan(t *testing.T) {
	op, dir := plannedOperator(t, nil)
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	require.Contains(t, p.files, "webhooks.go", "the plan writes webhooks.go (init ran without -webhooks)")

	// The user's own webhooks.go, saved after the plan was made.
	const users = "package main\n\n// The user's webhooks, saved while apigen create ran.\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks.go"), []byte(users), 0o644))
	before := snapshot(t, dir)

	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	var stdout bytes.Buffer
	err = p.apply(t.Context(), op, &stdout)
	require.Error(t, err, "stdout: %s", stdout.String())
	assert.Equal(t, before, snapshot(t, dir), "nothing written")

	got, rerr := os.ReadFile(filepath.Join(dir, "webhooks.go"))
	require.NoError(t, rerr, "the user's webhooks.go is gone after create's undo (apply: %v)", err)
	assert.Equal(t, users, string(got), "the user's webhooks.go was written over")
	assert.Contains(t, err.Error(), "webhooks.go", "the error names the file create would not write over")
}

// A change saved to a file create edits after create checked it, and
// before it writes it (while go env GOWORK runs), is not written over
// either: create checks each file again right before it writes it,
// refuses, and undoes what it wrote before; the user's file stays as they
// saved it.
func TestCreateRefusesFileChangedRightBeforeItsWrite(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the go on PATH that saves main.go is a shell script")
	}
	realGo, err := exec.LookPath("go")
	require.NoError(t, err)
	op, dir := plannedOperator(t, nil)
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	require.Contains(t, p.edits, "main.go")
	require.NotEqual(t, op.genArgs, p.genArgs, "generate.go's line changes: an edit written before main.go's, which the undo writes back")
	before := snapshot(t, dir)

	// The user's save of main.go while go env GOWORK runs (a go on PATH
	// that saves it, then runs the real go).
	const saved = "\n// Notes the user saved to main.go while apigen create wrote.\n"
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = env ]; then printf '%s' '" + saved + "' >> main.go; fi\nexec " + realGo + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	err = p.apply(t.Context(), op, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "main.go changed while apigen create read the module")
	want := before
	want[filepath.Join(dir, "main.go")] += saved
	assert.Equal(t, want, snapshot(t, dir), "the user's main.go as saved, the rest as it was")
}

// snapshot is every file under dir, by relative path.
func snapshot(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}
