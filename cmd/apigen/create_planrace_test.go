package main

import (
	"bytes"
	"os"
	"path/filepath"
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
