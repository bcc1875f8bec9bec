package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Two operators that init made with webhooks and -namespace naming one
// namespace have webhook Services and certificate Secrets of their own
// (named after each operator): applying the second does not take over the
// first's Service, nor do both rotate one Secret.
func TestInitWebhookServiceUniquePerOperator(t *testing.T) {
	t.Parallel()
	base := operatorModule(t, t.TempDir())
	type objects struct{ service, secretArg string }
	var got []objects
	for _, op := range []struct{ name, api string }{
		{"quiz-operator", "quiz.example.com/v1/Quiz"},
		{"widget-operator", "widget.example.com/v1/Widget"},
	} {
		dir := filepath.Join(t.TempDir(), op.name)
		require.NoError(t, os.CopyFS(dir, os.DirFS(base)))
		code, _, stderr := apigenIn(t, dir, nil, "init", "-name", op.name, "-namespace", "platform", "-api", op.api, "-webhooks")
		require.Equal(t, 0, code, "stderr: %s", stderr)
		files := tree(t, dir)
		var o objects
		for _, doc := range strings.Split(files["deploy/webhook.yaml"], "\n---\n") {
			var svc corev1.Service
			require.NoError(t, yaml.Unmarshal([]byte(doc), &svc))
			if svc.Kind == "Service" {
				require.Equal(t, "platform", svc.Namespace)
				o.service = svc.Name
			}
		}
		for _, line := range strings.Split(files["deploy/deployment.yaml"], "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(line), "- --webhook-cert-secret="); ok {
				o.secretArg = s
			}
		}
		got = append(got, o)
	}
	assert.NotEqual(t, got[0].service, got[1].service,
		"two operators in the namespace platform have the one webhook Service platform/%s: applying the second takes over the first's Service", got[0].service)
	assert.NotEqual(t, got[0].secretArg, got[1].secretArg,
		"two operators in the namespace platform issue their certificates into the one Secret %s", got[0].secretArg)
}
