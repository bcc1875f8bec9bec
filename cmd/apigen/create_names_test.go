package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kind whose name begins with an acronym (DNSRecord, URLMap, TLSRoute)
// gets names as kubebuilder's: its controller's queue (its metrics and
// logs) is "dnsRecord", main.go's variable dnsRecordCtrl, and its
// webhooks' paths, in the configuration the API server calls, are lower
// case (/default-dnsrecord), served at the constant that apigen's
// generation names after the path; one at the path an older apigen gave
// (/validate-dNSRecord) is found as the kind's.
func TestCreateAcronymKindNames(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]string{"DNSRecord": "dnsRecord", "URLMap": "urlMap", "DNS": "dns", "Widget": "widget", "S3Bucket": "s3Bucket"} {
		assert.Equal(t, want, lowerCamel(kind), kind)
	}
	op, dir := plannedOperator(t, nil)
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/DNSRecord"})
	require.NoError(t, err)
	assert.Contains(t, string(p.edits["main.go"]), "dnsRecordCtrl, err := newDNSRecordController(", "main.go's variable")
	assert.Contains(t, string(p.files["dnsrecord_controller.go"]), `queue.New("dnsRecord",`, "the queue's name")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/example/v1/dnsrecord_types.go"), []byte(strings.NewReplacer("Widget", "DNSRecord", "widgets", "dnsrecords").Replace(mustRender(t, "types.go.tmpl"))), 0o644))
	op, err = loadOperator(op.mod)
	require.NoError(t, err)
	p, err = op.planWebhooks(webhookRequest{kind: "DNSRecord", defaulting: true, validation: true})
	require.NoError(t, err)
	for _, typ := range []string{"default", "validate"} {
		src := string(p.files["dnsrecord_"+map[string]string{"default": "defaulting", "validate": "validation"}[typ]+"_webhook.go"])
		path := "/" + typ + "-dnsrecord"
		assert.Contains(t, src, "path="+path+",", "the webhook's path")
		assert.Contains(t, src, "webhook.Handle(webhookPath"+identifier(path)+", h)", "the constant generated for the path")
	}
	// A webhook that an older apigen made, at the path it gave the kind
	// then, is the kind's webhook all the same.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old_webhooks.go"), []byte("package main\n\n// +kubebuilder:webhook:path=/validate-dNSRecord,mutating=false\n"), 0o644))
	_, err = op.planWebhooks(webhookRequest{kind: "DNSRecord", validation: true})
	assert.ErrorContains(t, err, "DNSRecord has a validation webhook already")
}

// An operator that init made for a kind named with an acronym, with its
// validating webhook, gets a defaulting webhook from create webhook: both
// are served at the constants that the generation names after their
// lower-case paths (create builds package main, with init's webhooks.go),
// and the manifests have those paths.
func TestCreateAcronymKindWebhooksBuild(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "dns-operator", "-api", "example.com/v1/DNSRecord", "-webhooks")
	require.Equal(t, 0, code, "init: %s", stderr)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "DNSRecord", "-defaulting")
	require.Equal(t, 0, code, "create webhook\nstdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	assert.Contains(t, files["controller.go"], `queue.New("dnsRecord",`, "the queue's name")
	for _, path := range []string{"/validate-dnsrecord", "/default-dnsrecord"} {
		assert.Contains(t, files["deploy/webhook.yaml"], "path: "+path+"\n", "the configuration's path")
	}
	goIn(t, dir, "vet", "./...")
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

// The scaffolds' comments put no indefinite article before a kind, whose
// sound a name does not tell ("a User", "an HTTPRoute", "an Order"):
// types.go's Spec doc, which the CRD's description and kubectl explain
// show, the webhooks and their tests, the controllers' tests.
func TestScaffoldsPutNoArticleBeforeKind(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"Order", "User", "HTTPRoute", "Gadget"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			s := &scaffold{Name: "op", Webhooks: true}
			require.NoError(t, s.complete("shop.example.com/v1/"+kind))
			s.Module = "example.com/op"
			for _, tmpl := range []string{"types.go.tmpl", "controller_test.go.tmpl", "webhooks.go.tmpl"} {
				src, err := render(tmpl, s)
				require.NoError(t, err)
				files["init "+tmpl] = string(src)
			}
			op, dir := plannedOperator(t, nil)
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/" + kind})
			require.NoError(t, err)
			for rel, src := range p.files {
				files["create api "+rel] = string(src)
			}
			lower := strings.ToLower(kind)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/example/v1/"+lower+"_types.go"), p.files["apis/example/v1/"+lower+"_types.go"], 0o644))
			op, err = loadOperator(op.mod)
			require.NoError(t, err)
			p, err = op.planWebhooks(webhookRequest{kind: kind, defaulting: true, validation: true})
			require.NoError(t, err)
			for rel, src := range p.files {
				files["create webhook "+rel] = string(src)
			}
			article := regexp.MustCompile(`(?i)\ban? ` + kind + `\b`)
			for name, src := range files {
				assert.Empty(t, article.FindAllString(src, -1), name)
			}
			assert.Contains(t, files["init types.go.tmpl"], kind+"Spec is the desired state of the "+kind+".")
		})
	}
}
