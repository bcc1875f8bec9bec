package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/new-api.md: "go vet ./... and go test ./... pass on the result".
// create api of a new kind whose plural (controller-gen's, which the CRD,
// the role and, through +resourceName, the generated client use) is not
// the one client-go's fake clientset guesses from the kind (Gizmo:
// "gizmoes", guessed "gizmos"; Box, Quiz, Person, Leaf, ... alike) writes a
// controller test over fake.NewClientset that fails: the fake's tracker
// finds no kind for the resource the client asks for.
func TestCreateAPIKindWithIrregularPluralTestPasses(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gizmo")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, tree(t, dir)["apis/example/v1/gizmo_types.go"], "+resourceName=gizmoes")

	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestGizmoController", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "go test of the created kind's controller:\n%s", strings.TrimSpace(string(out)))
}

// The same for init's own kind: apigen init -api example.com/v1/Quiz says
// "go test ./... and go build . work now", and its controller test fails
// over the fake clientset (resource quizzes, guessed quizs).
func TestInitKindWithIrregularPluralTestPasses(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "quiz-operator", "-api", "example.com/v1/Quiz")
	require.Equal(t, 0, code, "init: %s", stderr)
	require.Contains(t, stdout, "go test ./... and go build . work now")

	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestController", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "go test of init's controller:\n%s", strings.TrimSpace(string(out)))
}
