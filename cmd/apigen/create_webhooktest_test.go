package main

import (
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
