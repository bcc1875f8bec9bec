package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// writePlan writes the files and edits of p into the operator's module in
// dir, as apply does before it generates, and loads the operator again.
func writePlan(t *testing.T, op *operatorDir, p *createPlan) *operatorDir {
	t.Helper()
	for _, m := range []map[string][]byte{p.files, p.edits} {
		for rel, src := range m {
			f := filepath.Join(op.mod.root, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
			require.NoError(t, os.WriteFile(f, src, 0o644))
		}
	}
	op, err := loadOperator(op.mod)
	require.NoError(t, err)
	return op
}

// Create api -hub of a new version of a kind of one version makes it the
// hub and storage version: the +kubebuilder:storageversion marker moves
// to its type (from the old hub's, where it was), and the conversions
// between the two, to and from the new hub, go into the old version's
// package, the new one getting none.
func TestCreateAPIHubMakesTheNewVersionTheHub(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		oldMarked     bool // the old hub has the storageversion marker
		wantOldEdited bool
	}{
		{name: "the old hub unmarked, as init writes it", oldMarked: false, wantOldEdited: false},
		{name: "the old hub marked", oldMarked: true, wantOldEdited: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op, _ := plannedOperator(t, func(rel, src string) string {
				if rel == "apis/example/v1/types.go" && tc.oldMarked {
					return strings.Replace(src, "// +genclient\n", "// +genclient\n// +kubebuilder:storageversion\n", 1)
				}
				return src
			})
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget", hub: true})
			require.NoError(t, err)
			conv := string(p.files["apis/example/v1/widget_conversion.go"])
			assert.Contains(t, conv, "package v1\n")
			assert.Contains(t, conv, `examplev2 "example.com/op/apis/example/v2"`)
			assert.Contains(t, conv, "func ConvertWidgetToV2(src *Widget, dst *examplev2.Widget) error {\n\tsrc.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)\n\treturn convertWidgetFields([2]any{src.Spec, &dst.Spec}, [2]any{src.Status, &dst.Status})")
			assert.Contains(t, conv, "func ConvertWidgetFromV2(src *examplev2.Widget, dst *Widget) error {")
			assert.NotContains(t, p.files, "apis/example/v2/widget_conversion.go", "the new hub's package converts to nothing")
			assert.Contains(t, string(p.files["apis/example/v2/types.go"]), "// +genclient\n// +kubebuilder:storageversion\n")
			_, edited := p.edits["apis/example/v1/types.go"]
			assert.Equal(t, tc.wantOldEdited, edited)
			if edited {
				assert.NotContains(t, string(p.edits["apis/example/v1/types.go"]), "storageversion")
				assert.Contains(t, string(p.edits["apis/example/v1/types.go"]), "// +genclient\n// +k8s:deepcopy-gen:interfaces")
			}
			assert.Contains(t, strings.Join(p.notes, "\n"), "Widget's hub and storage version is v2 now")

			// The one rule that finds the hub finds the new version.
			op = writePlan(t, op, p)
			versions, hub, err := op.versionsOf("Widget", "")
			require.NoError(t, err)
			assert.Len(t, versions, 2)
			assert.Equal(t, "v2", hub.version)
		})
	}
}

// Create api -hub is refused at the plan where it cannot make the new
// version the hub: for a new kind, for a kind of several versions (whose
// spokes convert through the old hub), saying what to do by hand, and for
// a kind with a conversion webhook.
func TestCreateAPIHubRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, op *operatorDir) *operatorDir
		api   string
		want  []string
	}{
		{name: "a new kind", api: "example.com/v1/Gadget",
			want: []string{"-hub makes a new version of a kind its hub, and the operator has no Gadget in the group example.com: leave -hub out for a new kind; nothing written"}},
		{name: "a kind of two versions", api: "example.com/v3/Widget",
			setup: func(t *testing.T, op *operatorDir) *operatorDir {
				p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
				require.NoError(t, err)
				return writePlan(t, op, p)
			},
			want: []string{"-hub: Widget has 2 versions, and the packages of those but the hub v1 (apis/example/v2) convert through it with ConvertWidgetToV1 and ConvertWidgetFromV1, which create does not rewrite; nothing written",
				"move \"// +kubebuilder:storageversion\" from v1's type Widget to v3's", "delete apis/example/v3's widget_conversion.go", "write ConvertWidgetToV3 and ConvertWidgetFromV3 in each other version's package"}},
		{name: "a kind with a conversion webhook", api: "example.com/v2/Widget",
			setup: func(t *testing.T, op *operatorDir) *operatorDir {
				require.NoError(t, os.WriteFile(filepath.Join(op.mod.root, "widget_conversion_webhook.go"), []byte("package main\n\nimport examplev1 \"example.com/op/apis/example/v1\"\n\nvar _ examplev1.Widget\n"), 0o644))
				return op
			},
			want: []string{"-hub: Widget has a conversion webhook (widget_conversion_webhook.go) whose versions convert through the hub v1 with ConvertWidgetToV1 and ConvertWidgetFromV1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op, _ := plannedOperator(t, nil)
			if tc.setup != nil {
				op = tc.setup(t, op)
			}
			p, err := op.planAPI(t.Context(), apiRequest{api: tc.api, hub: true})
			require.Error(t, err)
			assert.Nil(t, p)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// Create webhook -conversion is refused at its plan where a package of a
// version but the hub (the storage version) does not declare the
// functions the webhook converts with, naming them, the package and the
// rule: as after moving the storage marker to a new version by hand.
func TestCreateWebhookConversionRefusesMissingConversions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		newHub bool                         // create api -hub
		edit   func(rel, src string) string // of the files after create api
		want   []string                     // in the refusal; none: planned
	}{
		{name: "the spoke's conversions, as create api writes them"},
		{name: "the old hub's conversions, as create api -hub writes them", newHub: true},
		{name: "a conversion deleted",
			edit: func(rel, src string) string {
				if rel == "apis/example/v2/widget_conversion.go" {
					return strings.Replace(src, "func ConvertWidgetFromV1(", "func convertWidgetFromV1(", 1)
				}
				return src
			},
			want: []string{"the package apis/example/v2 (v2) declares no ConvertWidgetFromV1: the hub is the version marked +kubebuilder:storageversion, v1 (apis/example/v1/types.go); each other version's package converts to and from it with func ConvertWidgetToV1(src *Widget, dst *v1.Widget) error and func ConvertWidgetFromV1(src *v1.Widget, dst *Widget) error", "nothing written"}},
		{name: "the storage marker moved by hand",
			edit: func(rel, src string) string {
				switch rel {
				case "apis/example/v1/types.go":
					return strings.Replace(src, "// +kubebuilder:storageversion\n", "", 1)
				case "apis/example/v2/types.go":
					return strings.Replace(src, "// +genclient\n", "// +genclient\n// +kubebuilder:storageversion\n", 1)
				}
				return src
			},
			want: []string{"the package apis/example/v1 (v1) declares no ConvertWidgetToV2 and no ConvertWidgetFromV2: the hub is the version marked +kubebuilder:storageversion, v2 (apis/example/v2/types.go)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op, dir := plannedOperator(t, nil)
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget", hub: tc.newHub})
			require.NoError(t, err)
			op = writePlan(t, op, p)
			if tc.edit != nil {
				for _, rel := range []string{"apis/example/v1/types.go", "apis/example/v2/types.go", "apis/example/v2/widget_conversion.go"} {
					f := filepath.Join(dir, filepath.FromSlash(rel))
					b, err := os.ReadFile(f)
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(f, []byte(tc.edit(rel, string(b))), 0o644))
				}
				op, err = loadOperator(op.mod)
				require.NoError(t, err)
			}
			p, err = op.planWebhooks(webhookRequest{kind: "Widget", conversion: true})
			if len(tc.want) == 0 {
				require.NoError(t, err)
				assert.Contains(t, p.files, "widget_conversion_webhook.go")
				return
			}
			require.Error(t, err)
			assert.Nil(t, p)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// The common promotion, v1alpha1 to v1 with v1 the hub, as
// docs/new-api.md says it: init, create api -hub, create webhook
// -conversion make a module that builds and whose tests pass (the
// scaffolded round trip of the conversion webhook among them), whose CRD
// stores v1.
func TestCreateAPIHubPromotesV1alpha1ToV1(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	for _, args := range [][]string{
		{"init", "-name", "widget-operator", "-api", "example.com/v1alpha1/Widget"},
		{"create", "api", "-api", "example.com/v1/Widget", "-hub"},
		{"create", "webhook", "-kind", "Widget", "-conversion"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	files := tree(t, dir)
	assert.Contains(t, files["widget_conversion_webhook.go"], "webhook.Hub[*examplev1.Widget](examplev1.SchemeGroupVersion.String()),\n\t\twebhook.Spoke(examplev1alpha1.SchemeGroupVersion.String(), examplev1alpha1.ConvertWidgetToV1, examplev1alpha1.ConvertWidgetFromV1),")
	assert.NotContains(t, files, "apis/example/v1/widget_conversion.go")

	var crd struct {
		Spec struct {
			Versions []struct {
				Name    string `json:"name"`
				Storage bool   `json:"storage"`
			} `json:"versions"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(files["deploy/crd/example.com_widgets.yaml"]), &crd))
	storage := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		storage[v.Name] = v.Storage
	}
	assert.Equal(t, map[string]bool{"v1": true, "v1alpha1": false}, storage, "the CRD's versions and which one is stored")

	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		if args[0] == "test" {
			require.Regexp(t, `(?m)^ok\s+example\.com/`, string(out))
		}
	}
}

// docs/new-api.md says that the hub is the storage version, the rule of
// the conversion functions, how -hub promotes a new version, and what
// stays on the old version.
func TestNewAPIDocSaysHowToPromoteAVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "new-api.md"))
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(string(b)), " ")
	for _, want := range []string{
		"hub is the storage version: the version whose type is marked `+kubebuilder:storageversion`",
		"converts to and from it with `Convert<Kind>To<Hub>` and `Convert<Kind>From<Hub>`",
		"`go tool apigen create api -api example.com/v1/Widget -hub` for a Widget of `v1alpha1`, then `go tool apigen create webhook -kind Widget -conversion`",
		"make a new version the hub by hand",
		"the informers `main.go` makes and its `operator.CheckServed` list",
	} {
		assert.Contains(t, doc, want)
	}
}
