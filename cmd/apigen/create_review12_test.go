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
