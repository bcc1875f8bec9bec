package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where two groups have a kind of one name, the conversion webhook of the
// one (<kind>_conversion_webhook.go, importing its hub's package) is not
// the other's: create api of the other's new version leaves it alone, and
// -hub plans for the other, whose one version has no conversion webhook.
func TestCreateAPIConversionWebhookIsOfItsOwnGroup(t *testing.T) {
	t.Parallel()
	op, dir := plannedOperator(t, nil)
	other := &scaffold{Name: "widget-operator"}
	require.NoError(t, other.complete("other.example.com/v1/Widget"))
	other.Module = "example.com/op"
	for rel, tmpl := range map[string]string{"apis/other/v1/doc.go": "doc.go.tmpl", "apis/other/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, other)
		require.NoError(t, err)
		f := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, src, 0o644))
	}
	// example.com's Widget has two versions and its conversion webhook.
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	op = writePlan(t, op, p)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "widget_conversion_webhook.go"), []byte(exampleWidgetConversionWebhook), 0o644))
	op, err = loadOperator(op.mod)
	require.NoError(t, err)

	// Without -hub, other.example.com's new version is added as a spoke to
	// example.com's Widget's conversion webhook (whose hub is
	// *examplev1.Widget): the build fails and create undoes, naming a type
	// error rather than the other group. It should leave that webhook
	// alone and say that other.example.com's Widget has none.
	np, err := op.planAPI(t.Context(), apiRequest{api: "other.example.com/v2/Widget"})
	require.NoError(t, err)
	_, edited := np.edits["widget_conversion_webhook.go"]
	assert.False(t, edited, "example.com's Widget's conversion webhook edited for other.example.com's Widget:\n%s", np.edits["widget_conversion_webhook.go"])

	p, err = op.planAPI(t.Context(), apiRequest{api: "other.example.com/v2/Widget", hub: true})
	assert.NoError(t, err, "other.example.com's Widget has no conversion webhook")
	if err == nil {
		assert.Contains(t, p.files, "apis/other/v1/widget_conversion.go")
	}
}

const exampleWidgetConversionWebhook = `package main

import (
	"github.com/ctrlkit/ctrlkit/webhook"

	examplev1 "example.com/op/apis/example/v1"
	examplev2 "example.com/op/apis/example/v2"
)

// The conversion webhook of example.com's Widgets.
//
// +ctrlkit:conversionwebhook:path=/convert-widget

func widgetVersions() []webhook.Version[*examplev1.Widget] {
	return []webhook.Version[*examplev1.Widget]{
		webhook.Hub[*examplev1.Widget](examplev1.SchemeGroupVersion.String()),
		webhook.Spoke(examplev2.SchemeGroupVersion.String(), examplev2.ConvertWidgetToV1, examplev2.ConvertWidgetFromV1),
		// +apigen:scaffold:versions
	}
}
`
