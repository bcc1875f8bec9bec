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

// A namePrefix overlay of the deploy kustomization renames the webhook
// Service and the configurations, but the Deployment still issues its
// certificate for the generated Service's host and the operator publishes
// its CA into the generated names: the webhooks break. docs/webhooks.md
// says such overlays are not supported for an operator with webhooks; the
// test holds as long as either the host follows or the docs say so.
func TestNamePrefixOverlayIsUnsupportedWithWebhooks(t *testing.T) {
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
	if !strings.Contains(string(docs), "`namePrefix:` and `nameSuffix:` are not\nsupported for an operator with webhooks") {
		assert.Contains(t, strings.Split(hosts, ","), service,
			"an overlay with namePrefix: the API server calls %s, the Deployment issues the certificate for %s", service, hosts)
	}
}
