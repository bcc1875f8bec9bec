package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The user's patches are part of the kustomization apigen writes (every
// file of deploy/patches/), but the check that the webhook manifests agree
// ("the Service ... selects its pods at a port they have", docs/webhooks.md)
// reads only the generated files: a patch that points the webhook Service
// at another port of the pods passes the check, and kubectl apply -k
// installs a Service the API server cannot reach the operator through.
func TestCheckSeesTheUsersPatchOfTheWebhookService(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go": kubebuilderWebhooks,
		"deploy/patches/webhook-service.yaml": `apiVersion: v1
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
		var dep appsv1.Deployment
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var meta struct{ Kind string }
			require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
			switch meta.Kind {
			case "Service":
				require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
			case "Deployment":
				require.NoError(t, yaml.Unmarshal([]byte(doc), &dep))
			}
		}
		t.Fatalf("apigen accepted a kustomization whose webhook Service calls the pods' port %s, which their container %v does not declare (it listens at %q)",
			svc.Spec.Ports[0].TargetPort.String(), dep.Spec.Template.Spec.Containers[0].Ports, dep.Spec.Template.Spec.Containers[0].Args)
	}
	require.Contains(t, stderr, "webhook Service", "stdout: %s", stdout)
}

// testKubectl is the kubectl that hack/build-binaries.sh built (make test
// builds it before these tests run), in $CTRLKIT_TESTENV_BIN_DIR or the
// per-user cache.
func testKubectl(t *testing.T) string {
	t.Helper()
	pattern := filepath.Join(os.Getenv("HOME"), ".cache", "ctrlkit-testenv", "*", "kube-*", "kubectl")
	if dir := os.Getenv("CTRLKIT_TESTENV_BIN_DIR"); dir != "" {
		pattern = filepath.Join(dir, "kube-*", "kubectl")
	}
	found, _ := filepath.Glob(pattern)
	require.NotEmpty(t, found, "no kubectl at %s: build it with hack/build-binaries.sh (make test does)", pattern)
	return found[0]
}
