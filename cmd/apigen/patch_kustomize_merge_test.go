package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The user renames the pods' webhook port to https (a patch of the
// Deployment's container port that spells out protocol: TCP, as the
// Kubernetes docs' examples do) and points the Service at it. apigen's
// check, applying the patches with k8s.io strategicpatch (merge key
// containerPort), sees a container port https and a Service calling
// https: consistent, accepted. kubectl kustomize (kustomize v5.8.1) merges
// container and Service ports by [containerPort|port, protocol], finds no
// element {9443, TCP} in the generated port (no protocol) and drops the
// patch's port: it builds the Deployment with the port still named
// webhooks and the Service calling https, which the pods do not have, so
// the API server cannot reach the webhooks. The check must see what
// kustomize builds (and refuse it), not what strategicpatch makes.
func TestPatchedPortWithProtocolAsKustomizeBuildsIt(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	patches := map[string]string{
		"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: things-operator, namespace: things-system}\nspec: {template: {spec: {containers: [{name: operator, ports: [{containerPort: 9443, protocol: TCP, name: https}]}]}}}\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {ports: [{port: 443, targetPort: https}]}\n",
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "patches"), 0o755))
	for name, content := range patches {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "patches", name), []byte(content), 0o644))
	}

	// What kubectl kustomize builds from the same objects and patches.
	o := consistentOutput(t)
	o.service["apiVersion"], o.deployment["apiVersion"] = "v1", "apps/v1"
	var res []string
	for _, doc := range []map[string]any{o.service, o.deployment} {
		data, err := yaml.Marshal(doc)
		require.NoError(t, err)
		res = append(res, string(data))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "res.yaml"), []byte(strings.Join(res, "---\n")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [res.yaml]\npatches:\n- path: patches/dep.yaml\n- path: patches/svc.yaml\n"), 0o644))
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var built map[string]any
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		if m["kind"] == "Deployment" {
			built = m
		}
	}
	builtPort := str(dig(built, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["ports"].([]any)[0], "name")

	o = consistentOutput(t)
	require.NoError(t, applyUserPatches(&o, filepath.Join(dir, "patches")))
	seenPort := str(dig(o.deployment, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["ports"].([]any)[0], "name")
	assert.Equal(t, builtPort, seenPort, "the check sees the pods' port named %q, kubectl kustomize builds it named %q", seenPort, builtPort)
	assert.Error(t, checkWebhooks(o), "kubectl kustomize builds a Service calling the pods' port https, which they do not have (their port is %q); the check accepted it", builtPort)
}
