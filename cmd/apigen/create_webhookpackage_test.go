package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// webhooksPackageOperator is plannedOperator's operator whose generate.go
// generates its webhooks from a package of its own (-webhook deploy
// -webhook-paths=./webhooks), which holds a validating webhook of Widget
// at marker.
func webhooksPackageOperator(t *testing.T, marker string) (*operatorDir, string) {
	t.Helper()
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev -webhook deploy -webhook-paths=./webhooks", 1)
		}
		return src
	})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks", "widget.go"), []byte("package webhooks\n\n"+marker+"\n"), 0o644))
	return op, dir
}

// An operator that serves its webhooks from a package of its own
// (generate.go: -webhook deploy -webhook-paths=./webhooks, and ./webhooks
// holding the +kubebuilder:webhook markers, without which that line's
// generation fails) asks create webhook for a defaulting webhook of
// Widget. create writes its webhooks, with their markers, into the root
// package, and the generation refuses markers in more than one package:
// create refuses at its plan, writing nothing, naming ./webhooks and what
// to do, and does not add the root to -webhook-paths.
func TestCreateWebhookBesideWebhooksPackage(t *testing.T) {
	t.Parallel()
	op, _ := webhooksPackageOperator(t, "// +kubebuilder:webhook:path=/validate-widgets,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=vwidget.example.com,admissionReviewVersions=v1")

	_, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "webhook markers are in ./webhooks")
	assert.Contains(t, err.Error(), "move those webhooks into the root package")
	assert.Contains(t, err.Error(), "nothing written")
}

// The webhook that create webhook is asked for may be there already in
// the package of the line's -webhook-paths that holds the operator's
// webhook markers (./webhooks): create refuses it as one that exists,
// naming that package, as it does one in the root package.
func TestCreateWebhookSeesWebhookInWebhooksPackage(t *testing.T) {
	t.Parallel()
	op, _ := webhooksPackageOperator(t, "// +kubebuilder:webhook:path=/validate-widget,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=vwidget.example.com,admissionReviewVersions=v1")

	_, err := op.planWebhooks(webhookRequest{kind: "Widget", validation: true})
	assert.EqualError(t, err, "Widget has a validation webhook already (a marker of path /validate-widget in the package ./webhooks): nothing written")
}

// A package of -webhook-paths without webhook markers (an empty
// ./webhooks; a ./internal/... that does not exist yet) holds no
// webhooks: create webhook writes its webhook into the root package and
// adds the root to -webhook-paths (TestCreateWebhookAddsRootToWebhookPaths);
// a webhook marker in a test file is not one the generation reads.
func TestCreateWebhookIgnoresWebhooksPackageWithoutMarkers(t *testing.T) {
	t.Parallel()
	op, dir := webhooksPackageOperator(t, "// Package webhooks has no webhooks yet.")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks", "widget_test.go"), []byte("package webhooks\n\n// +kubebuilder:webhook:path=/validate-widget,mutating=false\n"), 0o644))

	p, err := op.planWebhooks(webhookRequest{kind: "Widget", validation: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"./webhooks", "."}, must(parseConfig(p.genArgs)).webhookPaths)

	op.genArgs = append(op.genArgs, "-webhook-paths", "./internal/...")
	op.genWords = append(op.genWords, "-webhook-paths", "./internal/...")
	p, err = op.planWebhooks(webhookRequest{kind: "Widget", validation: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"./internal/...", "."}, must(parseConfig(p.genArgs)).webhookPaths)
}

// End to end: an operator made by init -api, whose user added a
// validating webhook in a package of its own (./webhooks) and generates
// it (-webhook deploy -webhook-paths ./webhooks; go generate passes),
// runs apigen create webhook -kind Widget -defaulting, as
// docs/new-api.md says. create refuses before writing anything, naming
// ./webhooks, instead of writing the webhook into the root package and
// failing at the generation ("webhook markers in 2 packages ... keep
// them in one").
func TestCreateWebhookBesideWebhooksPackageEndToEnd(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
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
	before := tree(t, dir)

	code, _, stderr := apigenIn(t, dir, nil, "create", "webhook", "-kind", "Widget", "-defaulting")
	assert.Equal(t, 1, code, "stderr: %s", stderr)
	assert.NotContains(t, stderr, "webhook markers in 2 packages", "create planned a generation that cannot pass")
	assert.Contains(t, stderr, "webhook markers are in ./webhooks")
	assert.Contains(t, stderr, "nothing written")
	assert.Equal(t, before, tree(t, dir), "nothing written")
}
