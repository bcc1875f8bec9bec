package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// An operator whose name (-rbac-role, init's -name) is a valid name of
// its Deployment, ServiceAccount, roles and label gets a webhook Service
// the API server accepts: a Service's name is a DNS-1035 label (a
// leading letter, at most 63 characters), which <name>-webhooks is not
// for a name such as 3scale-operator or one of 55 characters or more.
// Before the Service was named after the operator, these operators got
// controller-gen's webhook-service and applied; now kubectl apply -k
// fails on the Service, and apigen does not refuse.
func TestWebhookServiceNameIsAServiceName(t *testing.T) {
	t.Parallel()
	for _, role := range []string{
		"3scale-operator",
		"platform-team-widget-operator-for-the-payments-clusters", // 55 characters
	} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": kubebuilderWebhooks})
			args := slices.Clone(kubebuilderDeployArgs)
			args[slices.Index(args, "-rbac-role")+1] = role
			code, stdout, stderr := apigen(t, dir, args...)
			if code != 0 {
				// A clear refusal is a fix too.
				assert.Contains(t, stderr, "Service", "stdout: %s", stdout)
				return
			}
			files := tree(t, dir)
			for _, doc := range strings.Split(files["deploy/webhook.yaml"], "\n---\n") {
				var svc corev1.Service
				require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
				if svc.Kind != "Service" {
					continue
				}
				assert.Empty(t, validation.IsDNS1035Label(svc.Name),
					"apigen -rbac-role %s generated the webhook Service %q, which the API server refuses (a Service name must be a DNS-1035 label)", role, svc.Name)
			}
		})
	}
}

// The same for an operator that init makes: init accepts -name
// 3scale-operator (a name of its Deployment, roles and namespace
// 3scale-operator-system), and with -webhooks its deploy/webhook.yaml
// holds a Service that the API server refuses.
func TestInitWebhookServiceNameIsAServiceName(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "3scale-operator", "-api", "example.com/v1/Widget", "-webhooks")
	if code != 0 {
		assert.Contains(t, stderr, "-name", "a clear refusal is a fix too")
		return
	}
	files := tree(t, dir)
	for _, doc := range strings.Split(files["deploy/webhook.yaml"], "\n---\n") {
		var svc corev1.Service
		require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
		if svc.Kind == "Service" {
			assert.Empty(t, validation.IsDNS1035Label(svc.Name),
				"init -name 3scale-operator -webhooks generated the webhook Service %q, which the API server refuses", svc.Name)
		}
	}
}
