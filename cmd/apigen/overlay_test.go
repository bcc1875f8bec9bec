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
	corev1 "k8s.io/api/core/v1"
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

// The generated kustomization is a base: an overlay that puts it into
// another namespace (kustomize's namespace:, the usual way to deploy one
// base per environment) moves the Service, the configurations' Service
// references, the Roles and the bindings, but not what the generated
// Deployment names the namespace with in its arguments, nor the
// certificate's host compiled into zz_generated.webhooks.go. The operator
// then creates its certificate Secret and Lease where its Roles no longer
// are, and serves a certificate for a host the API server does not call.
// Nothing (neither apigen's check nor the docs) says an overlay must not
// change the namespace.
func TestNamespaceOverlayKeepsTheDeploymentInItsNamespace(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go":             kubebuilderWebhooks,
		"overlays/prod/kustomization.yaml": "resources:\n- ../../deploy\nnamespace: things-prod\n",
	})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(dir, "overlays/prod")).CombinedOutput()
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
	require.Equal(t, "things-prod", svc.Namespace, "the overlay moved the webhook Service")
	// The arguments as the kubelet runs them in the Deployment's pods: it
	// expands $(NAME) of the container's variables, here those the
	// downward API gives the pod's namespace.
	c := dep.Spec.Template.Spec.Containers[0]
	var args []string
	for _, a := range c.Args {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
				a = strings.ReplaceAll(a, "$("+e.Name+")", dep.Namespace)
			}
		}
		args = append(args, a)
	}
	require.Equal(t, "things-prod", dep.Namespace, "the overlay moved the Deployment")
	assert.Contains(t, args, "--webhook-cert-secret=things-prod/things-operator-webhooks-certs",
		"the Deployment's certificate Secret follows the overlay's namespace (its Role did): %q", args)
	assert.NotContains(t, args, "--leader-elect-namespace=things-system",
		"the Deployment's Lease follows the overlay's namespace (its Role did): %q", args)
	assert.Contains(t, args, "--leader-elect-namespace=things-prod", "the Lease in the overlay's namespace: %q", args)
	assert.Contains(t, args, "--webhook-cert-hosts=things-operator-webhooks.things-prod.svc",
		"the certificate is issued for the host of the Service the overlay moved: %q", args)
}
