package main

import (
	"os"
	"path/filepath"
	"slices"
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

// The kustomization's resources are not only the Service, Deployment and
// configurations apigen generates: CRDs generated outside the deploy
// directory are listed as their kustomization (docs/new-api.md), which
// may hold a Service of the operator's own (its metrics Service, say).
// kubectl kustomize applies a patch of that Service; apigen refuses it as
// a patch of a Service "the kustomization does not hold", listing only
// the webhook Service.
func TestPatchOfAnotherServiceOfTheKustomization(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go":          kubebuilderWebhooks,
		"config/crd/kustomization.yaml": "resources:\n- metrics.yaml\n",
		"config/crd/metrics.yaml":       "apiVersion: v1\nkind: Service\nmetadata: {name: things-metrics, namespace: things-system}\nspec: {selector: {app.kubernetes.io/name: things-operator}, ports: [{port: 8080}]}\n",
		"deploy/patches/metrics.yaml":   "apiVersion: v1\nkind: Service\nmetadata: {name: things-metrics, namespace: things-system}\nspec: {ports: [{port: 8443, name: https}]}\n",
	})
	args := slices.Clone(kubebuilderDeployArgs)
	args[slices.Index(args, "-crd")+1] = "config/crd"
	code, stdout, stderr := apigen(t, dir, args...)
	assert.Equal(t, 0, code, "apigen refused a patch of the Service things-system/things-metrics, which the kustomization holds (through ../config/crd):\nstdout: %s\nstderr: %s", stdout, stderr)
}
