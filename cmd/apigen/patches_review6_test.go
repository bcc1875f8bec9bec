package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A strategic-merge patch of a cluster-scoped webhook configuration that
// names a namespace (the operator's, copied from the Deployment's patch)
// is one kustomize applies: kustomize compares the effective namespaces,
// and a cluster-scoped object's is the same whatever the patch says
// (kyaml resid.EffectiveNamespace; kubectl kustomize builds it and labels
// the configuration). apigen must not refuse it as a patch of an object
// the kustomization does not hold.
func TestPatchOfClusterScopedConfigurationWithNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vwc.yaml"), []byte(
		"kind: ValidatingWebhookConfiguration\napiVersion: admissionregistration.k8s.io/v1\nmetadata: {name: things-operator, namespace: things-system, labels: {team: payments}}\n"), 0o644))
	o := consistentOutput(t)
	err := applyUserPatches(&o, dir)
	require.NoError(t, err, "kustomize applies this patch to the cluster-scoped ValidatingWebhookConfiguration things-operator")
	assert.Equal(t, "payments", str(o.configurations[1], "metadata", "labels", "team"), "the check did not see the patched configuration")
}
