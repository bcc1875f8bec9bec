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

// goTry runs the go command in dir and returns its output and error.
func goTry(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// An operator of the group admission.example.com (its API package's
// import name is admissionv1, which init accepts) gets a defaulting
// webhook from apigen create webhook. docs/new-api.md: "go vet ./... and
// go test ./... pass on the result". The webhook's test imports
// k8s.io/api/admission/v1 as admissionv1 too, so package main's tests do
// not compile ("admissionv1 redeclared in this block"); create builds only
// the non-test packages and says nothing. It should pass (name the API
// package otherwise in the test, or refuse the group as init refuses
// metav1).
func TestReviewWebhookTestCompilesForAdmissionGroup(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "policy-operator", "-api", "admission.example.com/v1/Policy")
	require.Equal(t, 0, code, "init: %s", stderr)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Policy", "-defaulting")
	require.Equal(t, 0, code, "create webhook\nstdout: %s\nstderr: %s", stdout, stderr)
	out, err := goTry(t, dir, "vet", ".")
	assert.NoError(t, err, "go vet of the operator after create webhook:\n%s", out)
}

// A kind of the user's own (an existing kind, which create webhook takes
// as init's) that has no spec, as kinds that hold data or rules do: its
// defaulting webhook's test compares obj.Spec and does not compile
// ("obj.Spec undefined"), and create, which builds only the non-test
// packages, says nothing. go vet ./... should pass (compare the objects,
// or what the kind has).
func TestReviewDefaultingWebhookTestOfKindWithoutSpec(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
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
	out, err := goTry(t, dir, "vet", ".")
	assert.NoError(t, err, "go vet after create webhook:\n%s", out)
}
