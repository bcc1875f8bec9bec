package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator that serves its webhooks from a package of its own
// (generate.go: -webhook deploy -webhook-paths=./webhooks, and
// ./webhooks holding the +kubebuilder:webhook markers, without which
// that line's generation fails with "no +kubebuilder:webhook ... marker")
// asks create webhook for a defaulting webhook of Widget. Round 12 made
// create add "." to -webhook-paths, as it writes the new webhook, with
// its marker, into the root package. But generateWebhooks refuses
// markers in more than one package ("webhook markers in 2 packages ...:
// keep them in one"), so every such create fails at the generation and
// is undone. What should happen: the plan's -webhook-paths match
// exactly one package with webhook markers (create writes the webhook
// where the existing markers are, or refuses at its plan, naming
// ./webhooks, before writing anything).
func TestReviewCreateWebhookBesideWebhooksPackage(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev -webhook deploy -webhook-paths=./webhooks", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks", "widget.go"), []byte(`package webhooks

// +kubebuilder:webhook:path=/validate-widgets,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=vwidget.example.com,admissionReviewVersions=v1
`), 0o644))

	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	if err != nil {
		// Refused at the plan: fine, if it says why.
		assert.Contains(t, err.Error(), "webhooks")
		return
	}
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err)
	dirs, err := patternDirs(op.mod, cfg.webhookPaths)
	require.NoError(t, err)
	var withMarkers []string
	for _, d := range dirs {
		has := false
		for rel, src := range p.files {
			if filepath.ToSlash(filepath.Dir(rel)) == d && strings.Contains(string(src), "+kubebuilder:webhook:") {
				has = true
			}
		}
		entries, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d)))
		for _, e := range entries {
			if src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(d), e.Name())); err == nil && strings.HasSuffix(e.Name(), ".go") && strings.Contains(string(src), "+kubebuilder:webhook:") {
				has = true
			}
		}
		if has {
			withMarkers = append(withMarkers, d)
		}
	}
	assert.Len(t, withMarkers, 1, "the planned -webhook-paths %q read webhook markers in the packages %q: the generation refuses markers in more than one package, and create undoes everything", cfg.webhookPaths, withMarkers)
}

// A go:generate line that names the API directory, apis, as its argument
// (main.go's docs: "The API directory is the argument (default ./apis)";
// create takes the line: loadOperator accepts cfg.apis == "apis") gets
// from create webhook its webhook flags appended after that argument,
// where flag parsing has stopped: the plan's arguments then do not parse
// ("one API directory expected, got [apis -webhook deploy ...]"), and
// create fails with that error about its own line. What should happen:
// the flags go before the first argument that is not a flag, as
// readRoot does for the flag it changes.
func TestReviewCreateWebhookFlagsBeforeAPIDirArgument(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev apis", 1)
		}
		return src
	})
	require.Equal(t, "apis", op.genArgs[len(op.genArgs)-1])
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err, "the planned go:generate arguments %q", p.genArgs)
	assert.Equal(t, "deploy", cfg.webhookDir)
	assert.Equal(t, "apis", cfg.apis)
}

// The same line with the API directory as the docs write it, ./apis (the
// generation takes it; it is apis): create refuses the operator as one
// "with no API of its own (apigen init without -api, which reconciles
// ConfigMaps)", which it has. What should happen: ./apis (and apis/) are
// taken as apis, or the error says the line's API directory is not
// "apis".
func TestReviewCreateTakesDotSlashAPIs(t *testing.T) {
	t.Parallel()
	_, dir := plannedOperator(t, nil)
	gen := filepath.Join(dir, "generate.go")
	src, err := os.ReadFile(gen)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gen, []byte(strings.Replace(string(src), "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev ./apis", 1)), 0o644))
	_, err = loadOperator(module{root: dir, path: "example.com/op"})
	if err != nil {
		assert.NotContains(t, err.Error(), "init without -api", "an operator made by init -api, whose line names ./apis")
	}
}

// End to end, the defect of TestReviewCreateWebhookBesideWebhooksPackage:
// an operator made by init -api, whose user added a validating webhook
// in a package of its own (./webhooks) and generates it
// (-webhook deploy -webhook-paths ./webhooks; go generate passes), runs
// apigen create webhook -kind Widget -defaulting, as docs/new-api.md
// says. What should happen: create succeeds (the defaulting webhook
// beside the user's markers, or in the root with the generation still
// reading one package), or refuses before writing, naming ./webhooks.
// What happens: create adds "." to -webhook-paths, writes the webhook in
// the root, and the generation fails with "webhook markers in 2
// packages ... keep them in one"; everything is undone.
func TestReviewCreateWebhookBesideWebhooksPackageEndToEnd(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, _, stderr := apigenIn(t, dir, nil, "init", "-name", "widget-operator", "-api", "example.com/v1/Widget")
	require.Equal(t, 0, code, "init: %s", stderr)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks", "widget.go"), []byte(`// Package webhooks holds the operator's webhooks.
package webhooks

// The validating webhook of Widgets.
//
// +kubebuilder:webhook:path=/validate-widget,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=validate.widgets.example.com,admissionReviewVersions=v1

// Path is the validating webhook's path.
const Path = "/validate-widget"
`), 0o644))
	gen := filepath.Join(dir, "generate.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gen, []byte(strings.Replace(string(b), "-rbac-paths .", "-rbac-paths . -webhook deploy -webhook-paths ./webhooks", 1)), 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Widget", "-defaulting")
	if code != 0 {
		assert.NotContains(t, stderr, "webhook markers in 2 packages", "create planned a generation that cannot pass")
		assert.Contains(t, stderr, "webhooks", "a refusal names the webhooks package")
		assert.Contains(t, stderr, "nothing written")
		return
	}
	_ = stdout
}

// go generate expands $NAME in the go:generate line's words from the
// environment (go help generate: "$GOFILE ..., and any environment
// variable"), so a line with -deploy-image ghcr.io/acme/op:$TAG
// generates the deployment with the image of TAG. create reads the line
// into the arguments it generates with, unexpanded: its generation
// writes the image "ghcr.io/acme/op:$TAG" into deploy/deployment.yaml,
// which go generate would not. What should happen: create expands the
// words as go generate does (or refuses a line with $).
func TestReviewCreateExpandsGenerateLineAsGoGenerate(t *testing.T) {
	t.Setenv("TAG", "v1.2.3")
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image ghcr.io/acme/op:$TAG", 1)
		}
		return src
	})
	p, err := op.planAPI(t.Context(), "example.com/v1/Gadget")
	require.NoError(t, err)
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/acme/op:v1.2.3", cfg.deployImage, "the image create generates with, from the line %q", op.genLine)
}
