package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A method of the kind that names another kind of the hub's package (a
// helper that builds the Gadget a Widget owns) would bring that kind's
// type, with its +genclient and root markers, into the new version of
// Widget: the Gadget CRD would get a v2 no one asked for, with no storage
// version. create api refuses the method by name instead, with nothing
// written: no v2 declares Gadget, and the module builds as it did.
func TestCreatedVersionDoesNotCopyAnotherKind(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 0, code, "create api Gadget\nstdout: %s\nstderr: %s", stdout, stderr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/example/v1/widget_gadget.go"), []byte(`package v1

// Gadget returns the Gadget that w owns, named after it.
func (w *Widget) Gadget() *Gadget {
	g := &Gadget{}
	g.Name, g.Namespace = w.Name, w.Namespace
	return g
}
`), 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")
	code, stdout, stderr = apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 1, code, "create api v2 Widget\nstdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stderr, "apis/example/v1/widget_gadget.go's method Widget.Gadget uses Gadget, another kind of v1's package")
	assert.Contains(t, stderr, "nothing written")
	_, err := os.Stat(filepath.Join(dir, "apis/example/v2"))
	assert.True(t, os.IsNotExist(err), "v2 of Widget declares the kind Gadget: nothing written")
	cmd := exec.CommandContext(t.Context(), "go", "build", "./...")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", strings.TrimSpace(string(out)))
}
