package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A strategic-merge patch "$patch: delete" of a webhook configuration is
// one kubectl kustomize applies: it builds the kustomization without the
// configuration. apigen applies it with strategicpatch, which leaves an
// empty map in o.configurations (no kind, no name), and checkWebhooks then
// panics on c["kind"].(string): apigen crashes with a Go stack instead of
// seeing the configuration gone (and refusing, since the operator would
// still publish its CA into it).
func TestPatchDeletingAWebhookConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "no-validation.yaml"), []byte(
		"apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: things-operator}\n$patch: delete\n"), 0o644))
	o := consistentOutput(t)
	err := applyUserPatches(&o, dir)
	assert.NotPanics(t, func() {
		if err == nil {
			err = checkWebhooks(o)
		}
	}, "apigen crashes on a patch that deletes the ValidatingWebhookConfiguration things-operator")
}
