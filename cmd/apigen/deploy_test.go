package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator that only serves admission webhooks (its packages carry no
// +kubebuilder:rbac marker, so controller-gen writes no role.yaml) gets
// the deploy manifests and the roles of what its Deployment makes it do
// (the certificate's Secret, the CA published into its configurations,
// the Lease).
func TestDeployWebhookOnlyOperator(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": `package webhooks

// +kubebuilder:webhook:path=/validate-example-com-v1-thing,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=vthing-v1.kb.io,admissionReviewVersions=v1

// Serve serves them.
func Serve() {}
`})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "a webhook-only operator (no +kubebuilder:rbac marker) is refused by -deploy:\nstdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	assert.Contains(t, files, "deploy/kustomization.yaml")
	assert.Contains(t, files["deploy/rbac.yaml"], "validatingwebhookconfigurations", "the Deployment's own roles")
}
