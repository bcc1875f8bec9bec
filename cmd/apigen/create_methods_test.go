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

// A type of the hub's package that the kind uses and that has methods of
// its own, here the JSON form the API stores (a level written as its
// name, as +kubebuilder:validation:Type=string says), is copied to the
// new version without them: the new version's Level is a plain int, its
// JSON a number where the CRD's schema says string, and the skeleton
// conversion, which carries the fields over by their JSON, fails on any
// Widget with a level. The conversion test that create webhook writes
// fails although the versions' fields are the same (docs/new-api.md:
// "exact while the versions' fields are the same").
func TestCreatedVersionKeepsMethodsOfCopiedTypes(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	editModuleFile(t, dir, "apis/example/v1/types.go",
		"import metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"",
		"import (\n\t\"encoding/json\"\n\t\"strconv\"\n\t\"strings\"\n\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n)",
		"\tMessage string `json:\"message,omitempty\"`\n",
		"\tMessage string `json:\"message,omitempty\"`\n\t// Level is the user's own field.\n\t// +optional\n\tLevel Level `json:\"level,omitempty\"`\n")
	p := filepath.Join(dir, "apis/example/v1/types.go")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b = append(b, []byte(`
// Level is a level, stored as its name, L0, L1, ...
// +kubebuilder:validation:Type=string
type Level int

// MarshalJSON writes the level's name.
func (l Level) MarshalJSON() ([]byte, error) { return json.Marshal("L" + strconv.Itoa(int(l))) }

// UnmarshalJSON reads a level's name.
func (l *Level) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "L"))
	*l = Level(n)
	return err
}
`)...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")
	for _, args := range [][]string{
		{"create", "api", "-api", "example.com/v2/Widget"},
		{"create", "webhook", "-kind", "Widget", "-conversion"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestConvertWidgetWebhook", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	lines := strings.Split(string(out), "\n")
	if len(lines) > 12 {
		lines = lines[:12]
	}
	assert.NoError(t, err, "go test of the generated conversion webhook:\n%s", strings.Join(lines, "\n"))
}
