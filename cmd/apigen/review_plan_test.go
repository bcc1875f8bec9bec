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

// docs/new-api.md: "The commands change only what they own: ... the
// lines they add to main.go ... at the marker comments". create api
// (and create webhook) run gofmt over the whole of main.go when they add
// their lines, so a user's code elsewhere in main.go that is not as
// gofmt writes it (an aligned table, a one-line func, spacing kept on
// purpose) is rewritten too. Only the added lines should change.
func TestReviewCreateChangesOnlyItsLinesOfMain(t *testing.T) {
	t.Parallel()
	const own = "\n// userTable is the user's, laid out by hand.\nvar userTable = map[string]int{\"a\":    1, \"bbbbbb\": 2}\n"
	op, _ := reviewOperator(t, func(rel, src string) string {
		if rel == "main.go" {
			return src + own
		}
		return src
	})
	p, err := op.planAPI(t.Context(), "example.com/v1/Gadget")
	require.NoError(t, err)
	require.Contains(t, p.edits, "main.go")
	assert.Contains(t, string(p.edits["main.go"]), own, "the user's lines of main.go, outside the marker, as they were")
}

// A go:generate line that gives the webhook flags as -flag=value (as the
// flag package takes them, and as many write them) has webhooks already:
// create webhook should leave its webhook directory and paths alone. It
// looks for the word "-webhook" only, and appends "-webhook deploy
// -webhook-paths ." after the user's, which win (the last of a flag
// wins): the user's -webhook=config/webhook -webhook-paths=./internal/...
// become deploy and ".", and the generation writes the manifests and
// zz_generated.webhooks.go elsewhere.
func TestReviewCreateWebhookKeepsWebhookFlagsWithEquals(t *testing.T) {
	t.Parallel()
	op, _ := reviewOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, " -rbac deploy", " -webhook=config/webhook -webhook-paths=./internal/... -rbac deploy", 1)
		}
		return src
	})
	cfg, err := parseConfig(op.genArgs)
	require.NoError(t, err)
	require.Equal(t, "config/webhook", cfg.webhookDir)
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	cfg, err = parseConfig(p.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "config/webhook", cfg.webhookDir, "the user's webhook directory, args %q", p.genArgs)
	assert.Equal(t, []string{"./internal/..."}, cfg.webhookPaths, "the user's webhook paths, args %q", p.genArgs)
}

// A group whose first label has a dash (my-team.example.com, a valid API
// group) is refused by create api (and init) with "is not
// GROUP/VERSION/KIND ... (a group with a dot, ...)": the group has a
// dot, and the message does not say what is wrong with it. It should
// name the reason: the first label names the Go package directory and
// import name, and cannot hold a dash.
func TestReviewDashedGroupRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	op, _ := reviewOperator(t, nil)
	_, err := op.planAPI(t.Context(), "my-team.example.com/v1/Gadget")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "my-team", "the error names the label it refuses")
	assert.NotContains(t, err.Error(), "a group with a dot", "the group has a dot")
}

// init's main.go checks, before it starts, that the API server serves
// the kind's group version (operator.CheckServed: "fails fast, with a
// message that says what is wrong ... its CustomResourceDefinition is not
// installed"). create api of a kind in another group starts its
// controller beside init's but leaves the check as it was: an operator
// deployed without that group's CRD starts and waits on an informer that
// never syncs instead of saying what is missing. The new group version
// should join the check.
func TestReviewCreateAPIOtherGroupIsChecked(t *testing.T) {
	t.Parallel()
	op, _ := reviewOperator(t, nil)
	p, err := op.planAPI(t.Context(), "net.example.com/v1/DNSRecord")
	require.NoError(t, err)
	require.Contains(t, string(p.edits["main.go"]), "newDNSRecordController(", "the controller is wired")
	assert.Contains(t, string(p.edits["main.go"]), "netv1.SchemeGroupVersion", "main.go checks that the new group version is served")
}

// An operator whose generate.go has a second apigen line (a role of its
// own for another part of the module, say) is refused with "is not an
// operator that apigen init made: it has no main.go and generate.go with
// a //go:generate go tool apigen line naming -rbac-role", though it has
// both: the error should say that generate.go has two such lines and
// create does not know which to change.
func TestReviewTwoGenerateLinesError(t *testing.T) {
	t.Parallel()
	_, dir := reviewOperator(t, nil)
	gen := filepath.Join(dir, "generate.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	b = append(b, "//go:generate go tool apigen -out \"\" -crd \"\" -rbac deploy/tools -rbac-role widget-tools -rbac-paths ./tools/...\n"...)
	require.NoError(t, os.WriteFile(gen, b, 0o644))
	_, err = loadOperator(module{root: dir, path: "example.com/op"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "it has no main.go and generate.go with", "it has both")
}

// An operator checked out with CRLF line ends (git's core.autocrlf on
// Windows): go generate drops the \r that ends a //go:generate line, but
// create reads the line with it, so the last argument of generate.go's
// apigen line, -deploy-image's, is "widget-operator:dev\r": create's
// generation writes that image into deploy/deployment.yaml, and create
// webhook writes the line back with the \r inside it, before the flags it
// appends. create should read the line as go generate does.
func TestReviewGenerateLineWithCRLF(t *testing.T) {
	t.Parallel()
	op, _ := reviewOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.ReplaceAll(src, "\n", "\r\n")
		}
		return src
	})
	cfg, err := parseConfig(op.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "widget-operator:dev", cfg.deployImage, "the image of generate.go's line, as go generate reads it")
}
