package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Moving a controller to a new version as docs/new-api.md says (the
// imports of the API, apply configuration and informer packages, the
// import name, the client's and the informers' version calls in the
// controller and its test; in main.go the informer call and the group
// version CheckServed checks) leaves a module that vets and passes its
// tests; with the event recorder made as init's main.go says.
func TestNewAPIDocMovesAControllerToANewVersion(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	for _, args := range [][]string{
		{"init", "-name", "widget-operator", "-api", "example.com/v1/Widget"},
		{"create", "api", "-api", "example.com/v2/Widget"},
	} {
		code, stdout, stderr := apigenIn(t, dir, nil, args...)
		require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", args, stdout, stderr)
	}
	// The event recorder that init's main.go says how to make, made there.
	mainGo := filepath.Join(dir, "main.go")
	b, err := os.ReadFile(mainGo)
	require.NoError(t, err)
	var recorder []string
	for _, line := range strings.Split(string(b), "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			recorder = append(recorder, code)
		}
	}
	require.NotEmpty(t, recorder, "main.go's comment shows how to make a recorder")
	text, err := insertImport(string(b), "", "github.com/ctrlkit/ctrlkit/events", "\n")
	require.NoError(t, err)
	kube := "kube, err := kubernetes.NewForConfig(cfg)\n\tif err != nil {\n\t\treturn err\n\t}\n"
	require.Contains(t, text, kube)
	text = strings.Replace(text, kube, kube+"\t"+strings.Join(recorder, "\n\t")+"\n\tif err != nil {\n\t\treturn err\n\t}\n\t_ = recorder\n", 1)
	require.NoError(t, os.WriteFile(mainGo, []byte(text), 0o644))

	edit := func(rel string, pairs ...string) {
		f := filepath.Join(dir, rel)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := strings.NewReplacer(pairs...).Replace(string(b))
		require.NoError(t, os.WriteFile(f, []byte(src), 0o644))
	}
	// The controller's file and its test, as the doc says.
	for _, rel := range []string{"controller.go", "controller_test.go"} {
		edit(rel,
			`"example.com/op/apis/example/v1"`, `"example.com/op/apis/example/v2"`,
			`"example.com/op/generated/applyconfiguration/example/v1"`, `"example.com/op/generated/applyconfiguration/example/v2"`,
			`"example.com/op/generated/informers/externalversions/example/v1"`, `"example.com/op/generated/informers/externalversions/example/v2"`,
			"examplev1", "examplev2",
			"ExampleV1()", "ExampleV2()",
			"factory.Example().V1()", "factory.Example().V2()")
	}
	// main.go: the informer's factory.Example().V1() to V2(), v2's group
	// version checked, v1's dropped (no controller uses it).
	edit("main.go",
		"factory.Example().V1()", "factory.Example().V2()",
		`"example.com/op/apis/example/v1"`, `"example.com/op/apis/example/v2"`,
		"examplev1.SchemeGroupVersion", "examplev2.SchemeGroupVersion",
		"examplev1.AddToScheme", "examplev2.AddToScheme",
		"examplev1 ", "examplev2 ")
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s after following docs/new-api.md:\n%s", strings.Join(args, " "), out)
	}
}
