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
