package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Review (round 3): docs/webhooks.md presents the generated kustomization
// as a base for overlays ("one that sets another namespace: moves the
// Deployment's Lease, Secret and certificate host with it") and says
// nothing of the other usual overlay field, namePrefix (kubebuilder's own
// config/default sets one). A namePrefix overlay renames the webhook
// Service (and the configurations' references to it) and the
// configurations, but the Deployment still issues its certificate for
// webhook-service.<ns>.svc and the operator publishes its CA into the
// configurations by their unprefixed names (zz_generated.webhooks.go):
// the API server calls prefix-webhook-service with no CA and a
// certificate for another host. Neither apigen nor the docs say so.
func TestReviewNamePrefixOverlayKeepsCertificateHost(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go":             kubebuilderWebhooks,
		"overlays/prod/kustomization.yaml": "resources:\n- ../../deploy\nnamePrefix: prod-\n",
	})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(dir, "overlays/prod")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	var service string
	var dep appsv1.Deployment
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
		switch meta.Kind {
		case "Service":
			service = meta.Metadata.Name + "." + meta.Metadata.Namespace + ".svc"
		case "Deployment":
			require.NoError(t, yaml.Unmarshal([]byte(doc), &dep))
		}
	}
	c := dep.Spec.Template.Spec.Containers[0]
	var hosts string
	for _, a := range c.Args {
		if h, ok := strings.CutPrefix(a, "--webhook-cert-hosts="); ok {
			hosts = strings.ReplaceAll(h, "$(POD_NAMESPACE)", dep.Namespace)
		}
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "webhooks.md"))
	require.NoError(t, err)
	if !strings.Contains(string(docs), "namePrefix") {
		assert.Contains(t, strings.Split(hosts, ","), service,
			"an overlay with namePrefix: the API server calls %s, the Deployment issues the certificate for %s", service, hosts)
	}
}
