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

// A type of the hub's package whose deep copy the user wrote by hand
// (+k8s:deepcopy-gen=false, as for a type holding free-form values that
// deepcopy-gen cannot copy) is copied to the new version with that
// marker but without its DeepCopyInto: the new version's generated
// zz_generated.deepcopy.go calls in.Values.DeepCopyInto for WidgetSpec,
// a method the new version's Values does not have, and the new version
// does not build.
func TestCreateAPIVersionCopiesHandWrittenDeepCopy(t *testing.T) {
	t.Parallel()
	op := hubOperator(t, func(text string) string {
		text = strings.Replace(text, "\tMessage string", "\tValues Values `json:\"values,omitempty\"`\n\tMessage string", 1)
		return text + `
// Values are free-form values, copied by hand.
// +k8s:deepcopy-gen=false
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type Values struct {
	Object map[string]any ` + "`json:\"-\"`" + `
}

// DeepCopyInto copies the values into out.
func (in *Values) DeepCopyInto(out *Values) {
	out.Object = make(map[string]any, len(in.Object))
	for k, v := range in.Object {
		out.Object[k] = v
	}
}
`
	})
	plan, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	types := string(plan.files["apis/example/v2/types.go"])
	require.Contains(t, types, "type Values struct", "the hub's Values in the new version")
	require.Contains(t, types, "+k8s:deepcopy-gen=false", "deepcopy-gen makes none for the new version's Values")
	var pkg strings.Builder
	for rel, src := range plan.files {
		if strings.HasPrefix(rel, "apis/example/v2/") {
			pkg.Write(src)
		}
	}
	assert.True(t, strings.Contains(pkg.String(), "func (in *Values) DeepCopyInto(out *Values)"),
		"the new version's WidgetSpec's generated deep copy calls Values.DeepCopyInto, which its package must declare; the new version's Values:\n%s", types[strings.Index(types, "// Values are"):])
}

// The same in a module made by apigen init, as a user runs it: after
// create api of a second version, the operator does not build (or create
// api fails generating it).
func TestCreatedVersionWithHandWrittenDeepCopyBuilds(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	editModuleFile(t, dir, "apis/example/v1/types.go",
		"\tMessage string `json:\"message,omitempty\"`\n",
		"\tMessage string `json:\"message,omitempty\"`\n\t// Values are the user's free-form values.\n\t// +optional\n\tValues Values `json:\"values,omitempty\"`\n")
	p := filepath.Join(dir, "apis/example/v1/types.go")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b = append(b, []byte(`
// Values are free-form values, copied by hand.
// +k8s:deepcopy-gen=false
// +kubebuilder:object:generate=false
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type Values struct {
	Object map[string]any `+"`json:\"-\"`"+`
}

// DeepCopyInto copies the values into out.
func (in *Values) DeepCopyInto(out *Values) {
	out.Object = make(map[string]any, len(in.Object))
	for k, v := range in.Object {
		out.Object[k] = v
	}
}
`)...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "create api\nstdout: %s\nstderr: %s", stdout, stderr)
	cmd := exec.CommandContext(t.Context(), "go", "build", "./...")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "go build after create api:\n%s", out)
}
