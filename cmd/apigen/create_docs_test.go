package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The command docs/webhooks.md quotes for an operator that apigen init
// -api made (one version of its kind, as init makes it) is accepted on
// such an operator.
func TestWebhooksDocCreateCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "webhooks.md"))
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(doc)), " ")
	m := regexp.MustCompile("An operator that `apigen init -api` made gets .*? with `go tool apigen create webhook ([^`]*)`").FindStringSubmatch(text)
	require.NotNil(t, m, "the sentence of docs/webhooks.md")
	args := strings.Fields(m[1])

	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl", "controller.go": "controller.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, src, 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	var w webhookRequest
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-kind":
			i++
			w.kind = args[i]
		case "-defaulting":
			w.defaulting = true
		case "-validation":
			w.validation = true
		case "-conversion":
			w.conversion = true
		}
	}
	_, err = op.planWebhooks(w)
	require.NoError(t, err, "docs/webhooks.md's command, apigen create webhook %s, on an operator init -api made", m[1])
}

// As docs/webhooks.md and docs/new-api.md say, the defaulting and
// validating webhooks that create webhook writes for a kind of two
// versions serve its hub version alone, to which the API server converts
// the others.
func TestCreateWebhookServesTheHubVersionOnly(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, nil)
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	for _, files := range []map[string][]byte{p.files, p.edits} {
		for rel, src := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, rel), src, 0o644))
		}
	}
	op, err = loadOperator(op.mod)
	require.NoError(t, err)
	p, err = op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true, validation: true})
	require.NoError(t, err)
	for _, name := range []string{"widget_defaulting_webhook.go", "widget_validation_webhook.go"} {
		markers := regexp.MustCompile(`(?m)^// \+kubebuilder:webhook:.*$`).FindAllString(string(p.files[name]), -1)
		require.Len(t, markers, 1, name)
		require.Contains(t, markers[0], ",versions=v1,", name)
		require.NotContains(t, markers[0], "matchPolicy", name)
	}
	for _, doc := range []string{"webhooks.md", "new-api.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", doc))
		require.NoError(t, err)
		require.True(t, strings.Contains(strings.Join(strings.Fields(string(b)), " "), "serve the hub version only"), "%s says the webhooks serve the hub version only", doc)
	}
}
