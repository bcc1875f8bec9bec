package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kustomize finds a strategic-merge patch's object by its whole id: group,
// version, kind, name and namespace (resid.ResId.Equals). A patch of
// "apiVersion: serving.knative.dev/v1, kind: Service" is not one of the
// core v1 webhook Service (kubectl kustomize: "no matches for Id
// Service.v1.serving.knative.dev/things-webhook.things-system", or the
// Knative Service of that name if the kustomization holds one). patchTargets
// compares only kind and name, applies it to the webhook Service, and the
// check refuses a Service port kustomize never sets.
func TestPatchOfAnotherGroupsKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ksvc.yaml"), []byte(
		"apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {ports: [{port: 443, targetPort: 8443}]}\n"), 0o644))
	o := consistentOutput(t)
	require.NoError(t, applyUserPatches(&o, dir))
	assert.NoError(t, checkWebhooks(o), "a patch of the serving.knative.dev Service was applied to the core v1 webhook Service")
}
