package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reviewOperator writes the files init writes for example.com/v1/Widget
// (without generating), with edit applied to each, and loads it.
func reviewOperator(t *testing.T, edit func(rel, src string) string) (*operatorDir, string) {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl", "controller.go": "controller.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		text := string(src)
		if edit != nil {
			text = edit(rel, text)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	return op, dir
}

// A kind whose name begins with an acronym (DNSRecord, URLMap, TLSRoute)
// gets names that lower only its first letter: the controller's queue
// (its metrics and logs) is "dNSRecord", main.go's variable dNSRecordCtrl,
// and the webhooks' paths /default-dNSRecord and /validate-dNSRecord, in
// the configuration the API server calls. The names should be lower case
// (dnsRecord, /default-dnsrecord), as kubebuilder's are.
func TestReviewAcronymKindNames(t *testing.T) {
	t.Parallel()
	op, dir := reviewOperator(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/example/v1/dnsrecord_types.go"), []byte(strings.NewReplacer("Widget", "DNSRecord", "widgets", "dnsrecords").Replace(mustRender(t, "types.go.tmpl"))), 0o644))
	op, err := loadOperator(op.mod)
	require.NoError(t, err)
	p, err := op.planWebhooks(webhookRequest{kind: "DNSRecord", defaulting: true})
	require.NoError(t, err)
	assert.Contains(t, string(p.files["dnsrecord_defaulting_webhook.go"]), "path=/default-dnsrecord,", "the webhook's path")
}

// mustRender renders the template name for init's example.com/v1/Widget.
func mustRender(t *testing.T, name string) string {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	src, err := render(name, s)
	require.NoError(t, err)
	return string(src)
}
