package main

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// init refuses a group whose first label makes packages or names the
// operator cannot compile (internal, Go keywords, a name the generated
// code gives another package). The first label is also the name of the
// informer factory's method for the group (informer-gen's <Group>()), and
// the factory has methods Start and Shutdown of its own: a group
// start.example.com or shutdown.example.com makes a factory interface
// with a duplicate method. init must refuse it up front, as it refuses
// internal, or make an operator that builds.
func TestInitGroupNamedAfterAFactoryMethod(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "op", "-api", "start.example.com/v1/Widget")
	if code == 2 {
		return // refused up front, writing nothing
	}
	if code != 0 {
		t.Fatalf("init accepted -api start.example.com/v1/Widget and failed later (exit %d):\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = dir
	out, err := build.CombinedOutput()
	assert.NoError(t, err, "init made an operator that does not build:\n%s", out)
}

// informer-gen writes the factory's internal interfaces into the package
// informers/externalversions/internalinterfaces, and a group's informers
// into informers/externalversions/<first label>: a group
// internalinterfaces.example.com puts the group's interface.go (which
// imports internalinterfaces) into the internalinterfaces package. The
// change refuses groups whose first label clashes with the factory's
// methods but not this one; init must refuse it up front or make an
// operator that builds.
func TestInitGroupNamedInternalInterfaces(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "op", "-api", "internalinterfaces.example.com/v1/Widget")
	if code == 2 {
		return // refused up front, writing nothing
	}
	if code != 0 {
		t.Fatalf("init accepted -api internalinterfaces.example.com/v1/Widget and failed later (exit %d):\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	build := exec.Command("go", "build", "./...")
	build.Dir = dir
	out, err := build.CombinedOutput()
	assert.NoError(t, err, "init made an operator that does not build:\n%s", out)
}

// A group whose first label has a dash (my-team.example.com, a valid API
// group) or begins with a digit is refused by create api (and init) with
// the reason: the first label names the Go package directory and import
// name, and cannot hold a dash or begin with a digit; not with "is not
// GROUP/VERSION/KIND ... (a group with a dot, ...)", as the group has a
// dot.
func TestCreateDashedGroupRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, nil)
	_, err := op.planAPI(t.Context(), apiRequest{api: "my-team.example.com/v1/Gadget"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "my-team", "the error names the label it refuses")
	assert.NotContains(t, err.Error(), "a group with a dot", "the group has a dot")
	err = (&scaffold{Name: "widget-operator"}).complete("1team.example.com/v1/Gadget")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the group's first label \"1team\"", "init's error names the label it refuses")
}
