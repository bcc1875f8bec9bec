package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The docs promise that an init "stopped by SIGINT or SIGTERM
// undoes what it wrote". In a module that already holds API packages and
// their generated clients, init regenerates (replaces) those clients; a
// SIGTERM before go mod tidy removes the files init created but leaves
// the replaced ones as init rewrote them: the clientset now imports the
// removed group's packages and the module no longer builds.
func TestInitStoppedRestoresReplacedFiles(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	// An API library already in the module: apis/things/v1 and its
	// generated code (a plain run of apigen).
	require.NoError(t, os.CopyFS(filepath.Join(dir, "apis"), os.DirFS("testdata/fixture/apis")))
	code, _, stderr := apigenIn(t, dir, nil)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	require.Contains(t, before, "generated/clientset/versioned/clientset.go")

	code, _, stderr = apigenIn(t, dir, []string{stopEnv + "=tidy:TERM"}, "init", "-name", "op", "-api", "other.example.com/v1/Widget")
	require.Equal(t, 128+int(syscall.SIGTERM), code, "stderr: %s", stderr)
	after := tree(t, dir)
	assert.Equal(t, before["generated/clientset/versioned/clientset.go"], after["generated/clientset/versioned/clientset.go"],
		"the clientset init replaced is restored")
	assert.Equal(t, before, after, "SIGTERM undoes what init wrote")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
}
