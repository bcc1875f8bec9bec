package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator of a group whose first label is admission
// (admission.example.com: its API package's import name is admissionv1,
// which init accepts) gets a defaulting and a validating webhook from
// apigen create webhook, whose tests import k8s.io/api/admission/v1 too,
// under another name: create succeeds, and go vet passes on the result
// (docs/new-api.md: "go vet ./... and go test ./... pass on the result").
func TestCreateWebhookTestCompilesForAdmissionGroup(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "policy-operator", "-api", "admission.example.com/v1/Policy")
	require.Equal(t, 0, code, "init: %s", stderr)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Policy", "-defaulting", "-validation")
	require.Equal(t, 0, code, "create webhook\nstdout: %s\nstderr: %s", stdout, stderr)
	goIn(t, dir, "vet", ".")
}

// A kind of the user's own (an existing kind, which create webhook takes
// as init's) that has no spec, as kinds that hold data or rules do, gets
// a defaulting webhook: its scaffolded test compares the whole object
// (not a Spec the kind lacks), so create succeeds, go vet passes and the
// test passes.
func TestCreateDefaultingWebhookTestOfKindWithoutSpec(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/example/v1/setting_types.go"), []byte(`package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=settings
// +resourceName=settings

// Setting holds settings, as a ConfigMap holds data.
type Setting struct {
	metav1.TypeMeta   `+"`json:\",inline\"`"+`
	metav1.ObjectMeta `+"`json:\"metadata,omitempty\"`"+`

	// +optional
	Data map[string]string `+"`json:\"data,omitempty\"`"+`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SettingList is a list of Settings.
type SettingList struct {
	metav1.TypeMeta `+"`json:\",inline\"`"+`
	metav1.ListMeta `+"`json:\"metadata,omitempty\"`"+`
	Items           []Setting `+"`json:\"items\"`"+`
}
`), 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Setting", "-defaulting")
	require.Equal(t, 0, code, "create webhook\nstdout: %s\nstderr: %s", stdout, stderr)
	goIn(t, dir, "vet", ".")
	goIn(t, dir, "test", "-count=1", "-run", "^TestDefaultSettingWebhook$", ".")
}

// A kind with a resource.Quantity that is not a pointer (the size of a
// volume, a memory limit: a common field of an operator's spec) gets a
// defaulting webhook whose scaffolded test passes on the skeleton, which
// sets no default: the Quantity's zero value, encoded as "0", decodes as
// a Quantity of another form (Format DecimalSI), and the test compares
// the objects as the API server does (apiequality.Semantic), by value.
func TestCreateDefaultingWebhookTestOfKindWithQuantity(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	types := filepath.Join(dir, "apis/example/v1/types.go")
	b, err := os.ReadFile(types)
	require.NoError(t, err)
	src := strings.Replace(string(b), `import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"`,
		"import (\n\t\"k8s.io/apimachinery/pkg/api/resource\"\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n)", 1)
	src = strings.Replace(src, "\tMessage string `json:\"message,omitempty\"`\n",
		"\tMessage string `json:\"message,omitempty\"`\n\t// Size is the size of the Widget's volume.\n\t// +optional\n\tSize resource.Quantity `json:\"size,omitempty\"`\n", 1)
	require.Contains(t, src, "Size resource.Quantity")
	require.NoError(t, os.WriteFile(types, []byte(src), 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Widget", "-defaulting")
	require.Equal(t, 0, code, "create webhook\nstdout: %s\nstderr: %s", stdout, stderr)
	out, err := goTry(t, dir, "test", "-count=1", "-run", "^TestDefaultWidgetWebhook$", ".")
	assert.NoError(t, err, "the scaffolded test of the skeleton defaulting webhook fails:\n%s", out)
}
