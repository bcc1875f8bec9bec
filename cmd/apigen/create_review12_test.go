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

// Review round 12: an operator whose generate.go reads the roles' markers
// from packages other than the module root's (-rbac-paths ./internal/...,
// where the user moved init's controller) gets from create api a new
// controller in the root package, gadget_controller.go, whose
// +kubebuilder:rbac markers (list/watch gadgets, patch gadgets/status) no
// run of that line reads: the role lacks them, silently (the build and the
// fake-client test pass; the operator is forbidden at run time). create
// should refuse, naming -rbac-paths, or have the line's patterns cover the
// package it writes the controller to.
func TestReviewCreateAPIControllerOutsideRBACPaths(t *testing.T) {
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

	p, err := op.planAPI(t.Context(), "example.com/v1/Gadget")
	if err != nil {
		assert.Contains(t, err.Error(), "-rbac-paths", "a refusal should name -rbac-paths")
		return
	}
	require.Contains(t, p.files, "gadget_controller.go")
	require.Contains(t, string(p.files["gadget_controller.go"]), "+kubebuilder:rbac:groups=example.com,resources=gadgets,")
	paths := must(parseConfig(p.genArgs)).rbacPaths
	assert.True(t, slices.ContainsFunc(paths, func(p string) bool { return p == "." || p == "./..." }),
		"the controller's RBAC markers are in the module root, which the planned -rbac-paths %q do not read: the role will lack gadgets", paths)
}

// Review round 12: an operator whose generate.go already generates
// webhooks from another package (-webhook deploy -webhook-paths
// ./webhooks) gets from create webhook its webhook in the root package;
// create keeps the line's webhook flags as they are, so the generation
// then fails ("the webhook markers are in ., which the patterns of
// -webhook-paths do not match") after everything was written, and is
// undone. create should refuse at the plan, naming -webhook-paths (or add
// "." to them).
func TestReviewCreateWebhookOutsideWebhookPaths(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev -webhook deploy -webhook-paths ./webhooks", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.Equal(t, []string{"./webhooks"}, must(parseConfig(op.genArgs)).webhookPaths)

	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	if err != nil {
		assert.Contains(t, err.Error(), "-webhook-paths", "a refusal should name -webhook-paths")
		return
	}
	require.Contains(t, p.files, "widget_defaulting_webhook.go")
	paths := must(parseConfig(p.genArgs)).webhookPaths
	assert.True(t, slices.ContainsFunc(paths, func(p string) bool { return p == "." || p == "./..." }),
		"the webhook's marker is in the module root, which the planned -webhook-paths %q do not read: the generation fails after create wrote everything", paths)
}
