package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An operator that init made gets a second version of its kind, the three
// webhooks of the kind and a second kind, one command each, in a new
// module: then it builds, passes go vet and its generated tests, and
// generates the webhooks' manifests and the CRDs. The user's own files
// are left as they were; bad input and a webhook asked for twice are
// refused with a reason and write nothing.
func TestCreate(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	own := map[string]string{
		"helpers.go":     "package main\n\n// greeting is the user's own.\nfunc greeting() string { return \"hello\" }\n\nvar _ = greeting\n",
		"notes/todo.txt": "the user's own notes\n",
	}
	for rel, text := range own {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
	}

	refused := func(t *testing.T, want string, args ...string) {
		t.Helper()
		before, beforeDirs := tree(t, dir), dirs(t, dir)
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
		assert.Contains(t, stderr, want)
		assert.Equal(t, before, tree(t, dir), "nothing written")
		assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
	}
	for _, tt := range []struct {
		name, want string
		args       []string
	}{
		{name: "an unknown kind", want: "the operator's API has no kind Gadget (it has example.com/v1/Widget)", args: []string{"webhook", "-kind", "Gadget", "-validation"}},
		{name: "no webhook", want: "no webhook asked for", args: []string{"webhook", "-kind", "Widget"}},
		{name: "a conversion of one version", want: "Widget has one version, v1: a conversion webhook converts between two or more", args: []string{"webhook", "-kind", "Widget", "-defaulting", "-conversion"}},
		{name: "a bad version", want: `-api "example.com/V2/Widget" is not GROUP/VERSION/KIND`, args: []string{"api", "-api", "example.com/V2/Widget"}},
		{name: "a version the kind has", want: "the operator's API has example.com/v1/Widget already (apis/example/v1/types.go)", args: []string{"api", "-api", "example.com/v1/Widget"}},
		{name: "a group of the same directory", want: "the group example.org has its packages in apis/example", args: []string{"api", "-api", "example.org/v1/Gadget"}},
	} {
		t.Run(tt.name, func(t *testing.T) { refused(t, tt.want, append([]string{"create"}, tt.args...)...) })
	}

	// The commands of docs/new-api.md, then a third version, which joins
	// the conversion webhook's versions.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "new-api.md"))
	require.NoError(t, err)
	var steps [][]string
	for _, line := range strings.Split(string(doc), "\n") {
		if cmd, ok := strings.CutPrefix(line, "    go tool apigen create "); ok {
			steps = append(steps, append([]string{"create"}, strings.Fields(cmd)...))
		}
	}
	require.Equal(t, [][]string{
		{"create", "api", "-api", "example.com/v2/Widget"},
		{"create", "webhook", "-kind", "Widget", "-defaulting", "-validation", "-conversion"},
		{"create", "api", "-api", "example.com/v1/Gadget"},
	}, steps, "the commands of docs/new-api.md")
	for _, args := range append(steps, []string{"create", "api", "-api", "example.com/v1beta1/Widget"}) {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
		assert.NotContains(t, stdout, "add these lines", "init's markers are all there")
		assert.Contains(t, stdout, "apigen create: go mod tidy done; go test ./... and go build . work now\n", "as init says it")
	}
	refused(t, "Widget has a validation webhook already (a marker of path /validate-widget in the operator's package): nothing written",
		"create", "webhook", "-kind", "Widget", "-validation")
	refused(t, "the operator's API has example.com/v1/Gadget already", "create", "api", "-api", "example.com/v1/Gadget")

	files := tree(t, dir)
	for rel, text := range own {
		assert.Equal(t, text, files[rel], "the user's %s", rel)
	}
	for _, f := range []struct{ file, want string }{
		{"deploy/webhook.yaml", "name: default.widgets.example.com"},
		{"deploy/webhook.yaml", "name: validate.widgets.example.com"},
		{"deploy/webhook.yaml", "kind: Service"},
		{"deploy/crd-conversion.yaml", "name: widgets.example.com"},
		{"deploy/crd-conversion.yaml", "path: /convert-widget"},
		{"deploy/rbac.yaml", "- secrets"},
		{"deploy/deployment.yaml", "--webhook-cert-secret="},
		{"deploy/crd/example.com_gadgets.yaml", "kind: Gadget"},
		{"deploy/crd/example.com_widgets.yaml", "name: v2"},
		{"deploy/role.yaml", "- gadgets"},
		{"apis/example/v1/types.go", "// +genclient\n// +kubebuilder:storageversion\n"},
		{"main.go", "newGadgetController("},
		{"main.go", "operator.WithWebhooks(webhooks)"},
		{"webhooks.go", "defaultWidgetWebhook,\n\t\tvalidateWidgetWebhook,\n\t\tconvertWidgetWebhook,\n"},
		{"widget_conversion_webhook.go", "examplev2.ConvertWidgetToV1"},
		{"widget_conversion_webhook.go", "webhook.Spoke(examplev1beta1.SchemeGroupVersion.String(), examplev1beta1.ConvertWidgetToV1, examplev1beta1.ConvertWidgetFromV1),\n\t\t// +apigen:scaffold:versions"},
		{"apis/example/v1beta1/widget_conversion.go", "func ConvertWidgetFromV1(src *examplev1.Widget, dst *Widget) error"},
		{"generate.go", " -webhook deploy -webhook-paths .\n"},
	} {
		assert.Contains(t, files[f.file], f.want, f.file)
	}

	for _, plural := range []string{"widgets", "gadgets"} {
		assert.Equal(t, []string{"patch", "update"}, clusterRoleVerbs(t, files["deploy/role.yaml"], "example.com", plural+"/status"), "the role's verbs of the status of %s", plural)
	}

	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	}
}

// create refuses a module that init did not make, or made without an
// API, and writes nothing there.
func TestCreateRefusesOtherModules(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "no operator", want: "is not an operator that apigen init made"},
		{name: "a generate.go of another tool", files: map[string]string{"main.go": "package main\n", "generate.go": "package main\n\n//go:generate controller-gen crd\n"},
			want: "is not an operator that apigen init made"},
		{name: "an operator of ConfigMaps", files: map[string]string{"main.go": "package main\n",
			"generate.go": "package main\n\n//go:generate go tool apigen -out \"\" -crd \"\" -rbac deploy -rbac-role cm-operator -rbac-paths .\n"},
			want: "the operator cm-operator has no API of its own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			for rel, text := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			for _, args := range [][]string{{"create", "api", "-api", "example.com/v2/Thing"}, {"create", "webhook", "-kind", "Thing", "-validation"}} {
				code, _, stderr := apigen(t, dir, args...)
				assert.Equal(t, 1, code, "stderr: %s", stderr)
				assert.Contains(t, stderr, tt.want)
			}
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir))
		})
	}
}

// Where a file of the operator has lost the marker apigen adds lines at
// (the user changed it), create plans no change of it and prints the
// lines to add instead; with the marker, it adds them there.
func TestCreateWithoutMarkerPrints(t *testing.T) {
	t.Parallel()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	for _, marked := range []bool{true, false} {
		dir := t.TempDir()
		for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl", "controller.go": "controller.go.tmpl",
			"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
			src, err := render(tmpl, s)
			require.NoError(t, err)
			if !marked && rel == "main.go" {
				var kept []string
				for _, line := range strings.Split(string(src), "\n") {
					if !strings.Contains(line, "+apigen:scaffold:") {
						kept = append(kept, line)
					}
				}
				src = []byte(strings.Join(kept, "\n"))
			}
			p := filepath.Join(dir, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, src, 0o644))
		}
		op, err := loadOperator(module{root: dir, path: s.Module})
		require.NoError(t, err)
		api, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
		require.NoError(t, err)
		hooks, err := op.planWebhooks(webhookRequest{kind: "Widget", validation: true})
		require.NoError(t, err)
		if marked {
			assert.Empty(t, api.printed)
			assert.Empty(t, hooks.printed)
			assert.Contains(t, string(api.edits["main.go"]), "\tcontrollers = append(controllers, gadgetCtrl)\n\t// +apigen:scaffold:controllers")
			assert.Contains(t, string(hooks.edits["main.go"]), "\to.WebhookCertHosts, o.WebhookCABundles = webhookCertHosts, webhookCABundles\n\t// +apigen:scaffold:flags")
			continue
		}
		assert.NotContains(t, api.edits, "main.go", "main.go without its marker is not changed")
		assert.NotContains(t, hooks.edits, "main.go", "main.go without its markers is not changed")
		require.Len(t, api.printed, 1)
		assert.Contains(t, api.printed[0], "main.go has no \"// +apigen:scaffold:controllers\" line")
		assert.Contains(t, api.printed[0], "controllers = append(controllers, gadgetCtrl)")
		require.Len(t, hooks.printed, 2)
		assert.Contains(t, hooks.printed[0], "o.WebhookCertHosts, o.WebhookCABundles = webhookCertHosts, webhookCABundles")
		assert.Contains(t, hooks.printed[1], "opts = append(opts, operator.WithWebhooks(webhooks))")
		assert.Contains(t, hooks.files, "widget_validation_webhook.go", "the files of its own are written")
	}
}

// create api -h and create webhook -h print the usage of their own
// subcommand, not the other's; create without one prints both.
func TestCreateHelpPrintsItsOwnUsage(t *testing.T) {
	t.Parallel()
	webhookUsage := "apigen create webhook -kind KIND [-group GROUP] [-defaulting] [-validation] [-conversion]"
	apiUsage := "apigen create api -api GROUP/VERSION/KIND [-namespaced=false] [-hub]"
	tests := []struct {
		args      []string
		code      int
		want, not []string
		firstLine string
	}{
		{args: []string{"api", "-h"}, code: 0, firstLine: "usage: " + apiUsage, not: []string{"create webhook", "-kind"}},
		{args: []string{"webhook", "-h"}, code: 0, firstLine: "usage: " + webhookUsage, not: []string{"create api -api", "-api "}},
		{args: nil, code: 2, firstLine: "usage: " + webhookUsage, want: []string{"       " + apiUsage}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			assert.Equal(t, tt.code, runCreate(t.Context(), tt.args, &stdout, &stderr))
			out := stderr.String()
			first, _, _ := strings.Cut(out, "\n")
			assert.Equal(t, tt.firstLine, first)
			for _, s := range tt.want {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.not {
				assert.NotContains(t, out, s)
			}
		})
	}
}
