package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Review (round 3): the docs (main.go, docs/new-api.md) promise that init
// refuses, writing nothing, if a manifest it generates by name is in the
// module. With -webhooks it generates deploy/webhook.yaml, but a
// hand-written one there is not refused up front: init writes its files,
// generates, and only then fails (and undoes), the instance of issue 61's
// defect 16 for the webhooks' manifest.
func TestReviewInitRefusesHandWrittenWebhookManifestUpFront(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	writeFiles(t, dir, map[string]string{"deploy/webhook.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: mine\n"})
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "op", "-api", "example.com/v1/Widget", "-webhooks")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the module already has deploy/webhook.yaml", "refused up front, naming the file")
	assert.NotContains(t, stdout, "wrote", "init refuses, writing nothing")
	assert.Equal(t, before, tree(t, dir))
	assert.Equal(t, beforeDirs, dirs(t, dir))
}
