package main

import (
	"os"
	"path/filepath"
	"testing"

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
	goIn(t, dir, "vet", ".")
	goIn(t, dir, "test", "-count=1", "-run", "^TestDefaultSettingWebhook$", ".")
}
