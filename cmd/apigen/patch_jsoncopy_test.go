package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A JSON patch that copies the operator's container to add a sidecar, then
// gives the copy its own name and ports: kubectl kustomize (v5.8.1) builds
// the operator container unchanged (port webhooks 9443) beside the proxy
// (port proxy 8443). apigen's applyJSONPatch copies by reference, so the
// later replaces of /containers/1 also rewrite container 0, and the check
// refuses a kustomization whose pods do have the webhook port.
func TestJSONPatchCopyThenChangeTheCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sidecar.yaml"), []byte(
		"- {op: copy, from: /spec/template/spec/containers/0, path: /spec/template/spec/containers/-}\n"+
			"- {op: replace, path: /spec/template/spec/containers/1/name, value: proxy}\n"+
			"- {op: replace, path: /spec/template/spec/containers/1/ports, value: [{name: proxy, containerPort: 8443}]}\n"), 0o644))
	o := consistentOutput(t)
	require.NoError(t, applyUserPatches(&o, dir))
	containers := dig(o.deployment, "spec", "template", "spec", "containers").([]any)
	require.Len(t, containers, 2)
	assert.Equal(t, "operator", str(containers[0], "name"), "the replace of /containers/1/name renamed container 0 too (kustomize leaves it operator)")
	assert.NoError(t, checkWebhooks(o), "kubectl kustomize builds the operator container with its port webhooks 9443; the check must not refuse it")
}
