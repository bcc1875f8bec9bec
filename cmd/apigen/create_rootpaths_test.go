package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator whose generate.go reads the roles' markers from packages
// other than the module root's (-rbac-paths ./internal/..., where the
// user moved init's controller) gets from create api a new controller in
// the root package, gadget_controller.go, with +kubebuilder:rbac markers
// (list/watch gadgets, patch gadgets/status): create adds "." to the
// line's -rbac-paths, keeping the user's patterns, so that the role gets
// the controller's rules, and says so.
func TestCreateAPIAddsRootToRBACPaths(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-rbac-paths .", "-rbac-paths ./internal/...", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "internal", "controller"), 0o755))
	op, err := loadOperator(op.mod)
	require.NoError(t, err)
	require.Equal(t, []string{"./internal/..."}, must(parseConfig(op.genArgs)).rbacPaths)

	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	require.Contains(t, string(p.files["gadget_controller.go"]), "+kubebuilder:rbac:groups=example.com,resources=gadgets,")
	assert.Equal(t, []string{"./internal/...", "."}, must(parseConfig(p.genArgs)).rbacPaths)
	assert.Contains(t, p.genArgs, "./internal/... .", "the line's own -rbac-paths changed, not a second one added")
	require.Len(t, p.notes, 1)
	assert.Contains(t, p.notes[0], `-rbac-paths "./internal/..."`)

	// Patterns that read the root already stay as they are, however the
	// flag is given.
	op.genArgs = slices.Clone(op.genArgs)
	for i, a := range op.genArgs {
		if a == "-rbac-paths" {
			op.genArgs = slices.Concat(op.genArgs[:i], []string{"--rbac-paths=./..."}, op.genArgs[i+2:])
			break
		}
	}
	p, err = op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gizmo"})
	require.NoError(t, err)
	assert.Equal(t, op.genArgs, p.genArgs)
	assert.Empty(t, p.notes)
}

// An operator whose generate.go already generates webhooks from another
// package (-webhook deploy -webhook-paths ./webhooks) gets from create
// webhook its webhook in the root package: create adds "." to the line's
// -webhook-paths, so that the generation finds the webhook's marker in a
// package the patterns match instead of failing after create wrote
// everything.
func TestCreateWebhookAddsRootToWebhookPaths(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev -webhook deploy -webhook-paths=./webhooks", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.Equal(t, []string{"./webhooks"}, must(parseConfig(op.genArgs)).webhookPaths)

	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	require.Contains(t, p.files, "widget_defaulting_webhook.go")
	assert.Equal(t, []string{"./webhooks", "."}, must(parseConfig(p.genArgs)).webhookPaths)
	assert.Contains(t, p.genArgs, "-webhook-paths=./webhooks .")
	require.Len(t, p.notes, 1)
	assert.Contains(t, p.notes[0], "-webhook-paths")
}

// A go:generate line with -webhook-paths but no -webhook (the user set
// where the webhooks' markers are to be before the operator had any) gets
// from create webhook -webhook deploy and its own -webhook-paths extended
// with the root package where it does not read it, as an existing
// -webhook-paths is: not a second -webhook-paths ., which, the last of a
// flag winning, would override the user's and leave it on the line with
// no effect. Markers in another package of the user's patterns are
// refused, as they are on a line with -webhook.
func TestCreateWebhookExtendsWebhookPathsWithoutWebhook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		paths string   // the line's -webhook-paths, as written
		want  []string // the planned -webhook-paths
		note  bool     // whether create says it changed them
	}{
		{"-webhook-paths ./webhooks", []string{"./webhooks", "."}, true},
		{"--webhook-paths=./webhooks", []string{"./webhooks", "."}, true},
		{"-webhook-paths ./...", []string{"./..."}, false},
	} {
		op, dir := plannedOperator(t, func(rel, src string) string {
			if rel == "generate.go" {
				return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev "+c.paths, 1)
			}
			return src
		})
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
		require.Empty(t, must(parseConfig(op.genArgs)).webhookDir)

		p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
		require.NoError(t, err, c.paths)
		cfg := must(parseConfig(p.genArgs))
		assert.Equal(t, "deploy", cfg.webhookDir, c.paths)
		assert.Equal(t, c.want, cfg.webhookPaths, c.paths)
		n := 0
		scanFlags(p.genArgs, func(_ int, name string, _ bool) {
			if name == "webhook-paths" {
				n++
			}
		})
		assert.Equal(t, 1, n, "one -webhook-paths, the user's, in %q", p.genArgs)
		assert.Equal(t, c.note, len(p.notes) == 1, "%s: notes %q", c.paths, p.notes)
	}

	// Webhook markers in a package of those patterns are the generation's
	// then, beside the root's: create refuses as it does for a line with
	// -webhook (TestCreateWebhookBesideWebhooksPackage), writing nothing.
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev -webhook-paths ./webhooks", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks", "widget.go"), []byte("package webhooks\n\n// +kubebuilder:webhook:path=/validate-widgets,mutating=false,groups=example.com,resources=widgets,verbs=create,versions=v1,name=vwidget.example.com\n"), 0o644))
	_, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "webhook markers are in ./webhooks")
	assert.Contains(t, err.Error(), "nothing written")
}
