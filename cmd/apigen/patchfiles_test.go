package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// A strategic-merge patch file of the kustomization's patches may hold
// several patches, one a YAML document (kustomize applies each to its
// object): the check applies them all, so a Service patch in the second
// document that points the webhook Service at a port the pods do not have
// is refused.
func TestCheckSeesEveryDocumentOfAPatchFile(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go": kubebuilderWebhooks,
		"deploy/patches/operator.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: things-operator
  namespace: things-system
spec:
  replicas: 2
---
apiVersion: v1
kind: Service
metadata:
  name: things-operator-webhooks
  namespace: things-system
spec:
  ports:
  - port: 443
    targetPort: 8443
`,
	})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	if code == 0 {
		out, err := exec.Command(kubectl, "kustomize", filepath.Join(dir, "deploy")).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var svc corev1.Service
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var meta struct{ Kind string }
			require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
			if meta.Kind == "Service" {
				require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
			}
		}
		t.Fatalf("apigen accepted a kustomization whose webhook Service (as kubectl kustomize builds it) calls the pods' port %s, which they do not have",
			svc.Spec.Ports[0].TargetPort.String())
	}
	require.Contains(t, stderr, "webhook Service", "stdout: %s", stdout)
}
