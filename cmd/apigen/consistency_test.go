package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kubebuilderWebhooks are webhook markers as kubebuilder's scaffold writes
// them: no Service, no webhookconfiguration marker.
const kubebuilderWebhooks = `package webhooks

// +kubebuilder:webhook:path=/mutate-example-com-v1-thing,mutating=true,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=mthing-v1.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-example-com-v1-thing,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=vthing-v1.kb.io,admissionReviewVersions=v1
// +ctrlkit:conversionwebhook:crd=things.example.com,path=/convert
// +kubebuilder:rbac:groups=example.com,resources=things,verbs=get;list;watch

// Serve serves them.
func Serve() {}
`

// kubebuilderDeployArgs generate the CRD, the roles, the webhooks and the
// deploy manifests of ./webhooks into deploy.
var kubebuilderDeployArgs = []string{"-out", "", "-crd", "deploy/crd", "-rbac", "deploy", "-rbac-role", "things-operator", "-rbac-paths", "./webhooks/...",
	"-webhook", "deploy", "-webhook-paths", "./webhooks/...",
	"-deploy", "deploy", "-deploy-namespace", "things-system", "-deploy-image", "example.com/things:v1"}

// writeFiles writes files (by path relative to dir) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// Webhook markers that name no Service are called at the Service in the
// operator's namespace, -deploy-namespace: the Service, both
// configurations, the CRD's conversion, the certificate's hosts and its
// Secret agree with the Deployment. The configurations without a
// webhookconfiguration marker are named after the operator, not with
// controller-gen's placeholders that every such operator shares.
func TestWebhooksInTheDeployNamespace(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": kubebuilderWebhooks})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)

	docs := strings.Split(files["deploy/webhook.yaml"], "\n---\n")
	require.Len(t, docs, 3, files["deploy/webhook.yaml"])
	var svc corev1.Service
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &svc))
	assert.Equal(t, "things-system", svc.Namespace, "the Service is in the operator's namespace")
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &mutating))
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[2]), &validating))
	assert.Equal(t, "things-operator", mutating.Name, "named after the operator")
	assert.Equal(t, "things-operator", validating.Name, "named after the operator")
	require.Len(t, mutating.Webhooks, 1)
	require.Len(t, validating.Webhooks, 1)
	for _, s := range []*admissionregistrationv1.ServiceReference{mutating.Webhooks[0].ClientConfig.Service, validating.Webhooks[0].ClientConfig.Service} {
		require.NotNil(t, s)
		assert.Equal(t, svc.Name, s.Name, "the configuration calls the Service")
		assert.Equal(t, svc.Namespace, s.Namespace, "the configuration calls the Service")
	}
	assert.Contains(t, files["deploy/crd-conversion.yaml"], "namespace: things-system\n")
	assert.NotContains(t, files["deploy/crd-conversion.yaml"], "namespace: system\n")

	goFile := files["webhooks/zz_generated.webhooks.go"]
	assert.Contains(t, goFile, `var webhookCertHosts = []string{"webhook-service.things-system.svc"}`)
	assert.Contains(t, goFile, `MutatingWebhookConfigurations:   []string{"things-operator"}`)
	assert.Contains(t, goFile, `ValidatingWebhookConfigurations: []string{"things-operator"}`)

	var k struct {
		Resources []string
		Patches   []struct{ Path string }
	}
	require.NoError(t, yaml.Unmarshal([]byte(files["deploy/kustomization.yaml"]), &k))
	assert.Contains(t, k.Resources, "crd/example.com_things.yaml")
	assert.Contains(t, k.Patches, struct{ Path string }{"crd-conversion.yaml"}, "the CRD's conversion patch, with the CRD among the resources")

	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict([]byte(files["deploy/deployment.yaml"]), &d))
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-secret=things-system/webhook-service-certs")
	for rel, content := range files {
		if strings.HasPrefix(rel, "deploy/") {
			assert.NotContains(t, content, "namespace: system\n", "%s names controller-gen's namespace", rel)
		}
	}
}

// The CA is published only into the configurations that are generated: a
// webhookconfiguration marker of a kind without webhooks names none.
func TestCABundlesOfGeneratedConfigurations(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": `package webhooks

// +kubebuilder:webhookconfiguration:mutating=true,name=things-operator
// +kubebuilder:webhookconfiguration:mutating=false,name=things-operator
// +kubebuilder:webhook:path=/validate-thing,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=vthing-v1.kb.io,admissionReviewVersions=v1
`})
	code, stdout, stderr := apigen(t, dir, webhookArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	assert.NotContains(t, files["deploy/webhook.yaml"], "kind: MutatingWebhookConfiguration")
	goFile := files["webhooks/zz_generated.webhooks.go"]
	assert.Contains(t, goFile, `MutatingWebhookConfigurations:   nil`)
	assert.Contains(t, goFile, `ValidatingWebhookConfigurations: []string{"things-operator"}`)
}
