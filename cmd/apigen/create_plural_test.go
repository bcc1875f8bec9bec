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

// docs/new-api.md: "go vet ./... and go test ./... pass on the result".
// create api of a new kind whose plural (controller-gen's, which the CRD,
// the role and, through +resourceName, the generated client use) is not
// the one client-go's fake clientset guesses from the kind (Gizmo:
// "gizmoes", guessed "gizmos"; Box, Quiz, Person, Leaf, ... alike) writes a
// controller test over fake.NewClientset that fails: the fake's tracker
// finds no kind for the resource the client asks for.
func TestCreateAPIKindWithIrregularPluralTestPasses(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gizmo")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, tree(t, dir)["apis/example/v1/gizmo_types.go"], "+resourceName=gizmoes")

	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestGizmoController", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "go test of the created kind's controller:\n%s", strings.TrimSpace(string(out)))
}

// The same for init's own kind: apigen init -api example.com/v1/Quiz says
// "go test ./... and go build . work now", and its controller test fails
// over the fake clientset (resource quizzes, guessed quizs).
func TestInitKindWithIrregularPluralTestPasses(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "quiz-operator", "-api", "example.com/v1/Quiz")
	require.Equal(t, 0, code, "init: %s", stderr)
	require.Contains(t, stdout, "go test ./... and go build . work now")

	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "TestController", ".")
	cmd.Dir = dir
	cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "go test of init's controller:\n%s", strings.TrimSpace(string(out)))
}

// The scaffolds name the kind's objects by its real plural, the one its
// resource path has (+kubebuilder:resource:path=shelves), not the kind and
// an s ("a list of Shelfs", a parameter shelfs): spelled as the kind in
// prose (Shelves, HTTPRoutes) and lowerCamel in Go names (httpRoutes),
// in init's files and in create api's and create webhook's.
func TestScaffoldsNameKindsByTheirPlural(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, prose, goName string }{
		{"Shelf", "Shelves", "shelves"},
		{"Quiz", "Quizzes", "quizzes"},
		{"Person", "People", "people"},
		{"HTTPRoute", "HTTPRoutes", "httpRoutes"},
		{"Gadget", "Gadgets", "gadgets"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			lower, file := lowerCamel(tc.kind), strings.ToLower(tc.kind)
			s := &scaffold{Name: "shop-operator", Webhooks: true}
			require.NoError(t, s.complete("example.com/v1/"+tc.kind))
			s.Module = "example.com/op"
			initFiles := map[string]string{}
			for _, name := range []string{"main.go.tmpl", "controller.go.tmpl", "types.go.tmpl", "webhooks.go.tmpl"} {
				src, err := render(name, s)
				require.NoError(t, err, name)
				initFiles[name] = string(src)
			}
			assert.Contains(t, initFiles["types.go.tmpl"], "// "+tc.kind+"List is a list of "+tc.prose+".\n")
			assert.Contains(t, initFiles["controller.go.tmpl"], "returns the controller of "+tc.prose+" over their informer")
			assert.Contains(t, initFiles["controller.go.tmpl"], "client versioned.Interface, "+tc.goName+" "+lower+"informers.")
			assert.Contains(t, initFiles["controller.go.tmpl"], "r."+tc.goName+".Get(key)")
			assert.Contains(t, initFiles["webhooks.go.tmpl"], "The webhooks of "+tc.prose+",")

			op, dir := plannedOperator(t, nil)
			p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/" + tc.kind})
			require.NoError(t, err)
			types := "apis/example/v1/" + file + "_types.go"
			assert.Contains(t, string(p.files[types]), "// "+tc.kind+"List is a list of "+tc.prose+".\n")
			controller := string(p.files[file+"_controller.go"])
			assert.Contains(t, controller, "returns the controller of "+tc.prose+" over their informer")
			assert.Contains(t, controller, "client versioned.Interface, "+tc.goName+" "+lower+"informers.")
			assert.Contains(t, controller, "r."+tc.goName+".Get(key)")
			created := map[string]string{types: string(p.files[types]), "controller": controller}

			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(types)), p.files[types], 0o644))
			op, err = loadOperator(op.mod)
			require.NoError(t, err)
			p, err = op.planWebhooks(webhookRequest{kind: tc.kind, defaulting: true, validation: true})
			require.NoError(t, err)
			for _, typ := range []string{"defaulting", "validation"} {
				src := string(p.files[file+"_"+typ+"_webhook.go"])
				assert.Contains(t, src, "webhook of "+tc.prose+", from which apigen generates", typ)
				assert.Contains(t, src, "The API server sends it "+tc.prose+" of every", typ)
				created[typ] = src
			}

			// Only the generated client's methods are named by its own
			// plural (Persons).
			if tc.kind+"s" != tc.prose {
				for name, src := range initFiles {
					src = strings.ReplaceAll(src, "."+s.ClientPlural+"(", "")
					assert.NotContains(t, src, tc.kind+"s", "init's "+name)
					assert.NotContains(t, src, lower+"s ", "init's "+name)
				}
				for name, src := range created {
					src = strings.ReplaceAll(src, "."+s.ClientPlural+"(", "")
					assert.NotContains(t, src, tc.kind+"s", "create's "+name)
					assert.NotContains(t, src, lower+"s ", "create's "+name)
				}
			}
		})
	}
}

// A kind whose resource path (+kubebuilder:resource:path, which create
// reads from its types) makes no Go name, such as gizmo-things, gets the
// kind and an s as the Go name of its objects, and that path in prose.
func TestScaffoldsNameKindsByAPluralThatIsNoGoName(t *testing.T) {
	t.Parallel()
	s := &scaffold{Kind: "Gizmo", Plural: "gizmo-things"}
	assert.Equal(t, "Gizmo-things", s.KindPlural())
	assert.Equal(t, "gizmos", s.LowerPlural())
	s = &scaffold{Kind: "Gizmo", Plural: "widgets"}
	assert.Equal(t, "Widgets", s.KindPlural())
	assert.Equal(t, "widgets", s.LowerPlural())
}

// The operator's --workers flag sets the workers of every controller,
// those create api adds too: its help names no kind.
func TestCreateAPIWorkersHelpNamesNoKind(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, nil)
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	main := string(p.edits["main.go"])
	require.Contains(t, main, "gadgetCtrl, err := newGadgetController(client, factory.Example().V1().Gadgets(), append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)")
	assert.Contains(t, main, `fs.IntVar(&o.workers, "workers", 2, "Number of objects each controller reconciles at once.")`)
}
