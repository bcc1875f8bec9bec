package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfRegisteringRegister is a register.go of apis/example/v1 of the user's
// own, as examples/bucket's and foo's are: with it, the package declares
// SchemeGroupVersion and register-gen does not run for it.
const selfRegisteringRegister = `package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the package's kinds.
const GroupName = "example.com"

// SchemeGroupVersion is the group and version of the package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Kind returns the group-qualified kind of the given kind name.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource returns the group-qualified resource of the given resource name.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add the package's types to
	// a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Widget{},
		&WidgetList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
`

// initOperator writes the files init writes for example.com/v1/Widget
// (without generating) and the files extra (by slash path), and loads
// the operator.
func initOperator(t *testing.T, extra map[string]string) (*operatorDir, string) {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	dir := t.TempDir()
	files := map[string]string{}
	for rel, tmpl := range map[string]string{"main.go": "main.go.tmpl", "generate.go": "generate.go.tmpl", "controller.go": "controller.go.tmpl",
		"apis/example/v1/doc.go": "doc.go.tmpl", "apis/example/v1/types.go": "types.go.tmpl"} {
		src, err := render(tmpl, s)
		require.NoError(t, err)
		files[rel] = string(src)
	}
	maps.Copy(files, extra)
	for rel, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	op, err := loadOperator(module{root: dir, path: s.Module})
	require.NoError(t, err)
	return op, dir
}

// Create api with a new kind named like a function (or a variable,
// constant or type) that its API package declares, such as the Kind
// function of a register.go of the user's own, is refused, naming the
// declaration, with nothing planned; register-gen's names, which it does
// not declare, are the kind's to take there.
func TestCreateAPIRefusesKindNamedLikeDeclaration(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, map[string]string{"apis/example/v1/register.go": selfRegisteringRegister})
	for api, want := range map[string]string{
		"example.com/v1/Kind":      "apis/example/v1/register.go declares a function Kind",
		"example.com/v1/Scheme":    "", // SchemeBuilder is no type of the kind Scheme
		"example.com/v1/Install":   "", // register-gen's, but it does not run for the package
		"example.com/v1/GroupName": "apis/example/v1/register.go declares a constant GroupName",
	} {
		_, err := op.planAPI(t.Context(), apiRequest{api: api})
		if want == "" {
			assert.NoError(t, err, api)
			continue
		}
		require.Error(t, err, api)
		assert.Contains(t, err.Error(), want, api)
	}
}

// An API package that registers its types itself (its own register.go
// declaring SchemeGroupVersion and addKnownTypes, as examples/bucket's
// do and apigen supports: register-gen then does not run for it) gets a
// new kind from apigen create api registered: the generated clientset's
// scheme has Gadget, so the created controller's test passes (its fake
// stores Gadgets), as the operator's informer would list them.
func TestCreatedKindOfSelfRegisteringPackageIsRegistered(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	v1 := filepath.Join(dir, "apis/example/v1")
	gen := filepath.Join(v1, "zz_generated.register.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	b = regexp.MustCompile(`(?m)^// Code generated .*\n`).ReplaceAll(b, nil)
	require.NoError(t, os.WriteFile(filepath.Join(v1, "register.go"), b, 0o644))
	require.NoError(t, os.Remove(gen))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")

	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Gadget")
	require.Equal(t, 0, code, "create api\nstdout: %s\nstderr: %s", stdout, stderr)
	out, err := goTry(t, dir, "test", "-count=1", "-run", "TestGadgetController", ".")
	assert.NoError(t, err, "go test of the created kind's controller:\n%s", out)
}

// Create api with a new kind, or a new version of a kind, in an existing
// API package that registers its types itself (register.go declares
// SchemeGroupVersion: register-gen, which registers every +genclient
// type, does not run for it) adds the kind's type and list to the
// package's one scheme.AddKnownTypes(SchemeGroupVersion, ...) call, as
// its arguments are laid out, and changes nothing else of the file;
// without the kind registered, the clientset's scheme (and so the
// operator's informer and the fake of the controller's test) could not
// decode it.
func TestCreateAPIRegistersKindInSelfRegisteringPackage(t *testing.T) {
	t.Parallel()
	oneLine := strings.Replace(selfRegisteringRegister, "scheme.AddKnownTypes(SchemeGroupVersion,\n\t\t&Widget{},\n\t\t&WidgetList{},\n\t)", "scheme.AddKnownTypes(SchemeGroupVersion, &Widget{}, &WidgetList{})", 1)
	require.NotEqual(t, selfRegisteringRegister, oneLine)
	for _, tt := range []struct {
		name, register, want, added string
	}{
		{"one a line", selfRegisteringRegister, "scheme.AddKnownTypes(SchemeGroupVersion,\n\t\t&Widget{},\n\t\t&WidgetList{},\n\t\t&Gadget{},\n\t\t&GadgetList{},\n\t)", "\t\t&Gadget{},\n\t\t&GadgetList{},\n"},
		{"in one line", oneLine, "scheme.AddKnownTypes(SchemeGroupVersion, &Widget{}, &WidgetList{}, &Gadget{}, &GadgetList{})", ", &Gadget{}, &GadgetList{}"},
	} {
		op, _ := initOperator(t, map[string]string{"apis/example/v1/register.go": tt.register})
		p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
		require.NoError(t, err, tt.name)
		got := string(p.edits["apis/example/v1/register.go"])
		assert.Contains(t, got, tt.want, tt.name)
		assert.Equal(t, tt.register, strings.Replace(got, tt.added, "", 1), "%s: only the kind's types added", tt.name)
	}

	// A new version of Widget in a package of Gadget's that registers
	// itself.
	op, _ := initOperator(t, map[string]string{
		"apis/example/v2/doc.go":      strings.Replace(mustRenderInit(t, "doc.go.tmpl"), "package v1", "package v2", 1),
		"apis/example/v2/types.go":    strings.NewReplacer("package v1", "package v2", "Widget", "Gadget", "widgets", "gadgets").Replace(mustRenderInit(t, "types.go.tmpl")),
		"apis/example/v2/register.go": strings.NewReplacer("package v1", "package v2", `"v1"`, `"v2"`, "Widget", "Gadget").Replace(selfRegisteringRegister),
	})
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v2/Widget"})
	require.NoError(t, err)
	assert.Contains(t, string(p.edits["apis/example/v2/register.go"]), "\t\t&Gadget{},\n\t\t&GadgetList{},\n\t\t&Widget{},\n\t\t&WidgetList{},\n\t)", "the new version registered")
	assert.Contains(t, p.files, "apis/example/v2/widget_types.go")

	// A package that registers itself with register-gen's names generated
	// is left to register-gen.
	op, _ = initOperator(t, nil)
	p, err = op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	assert.Equal(t, []string{"main.go"}, slices.Collect(maps.Keys(p.edits)))
}

// Where apigen cannot add the new kind to a self-registering package's
// registration exactly (no scheme.AddKnownTypes(SchemeGroupVersion, ...)
// call, two AddKnownTypes calls, one in a file with build constraints),
// create api refuses before anything is written, naming what the
// package's registration must hold.
func TestCreateAPIRefusesKindItCannotRegister(t *testing.T) {
	t.Parallel()
	for name, register := range map[string]string{
		"another group version": strings.Replace(selfRegisteringRegister, "scheme.AddKnownTypes(SchemeGroupVersion,", "scheme.AddKnownTypes(schema.GroupVersion{Group: GroupName, Version: \"v1\"},", 1),
		"two calls":             strings.Replace(selfRegisteringRegister, "\tmetav1.AddToGroupVersion", "\tscheme.AddKnownTypes(SchemeGroupVersion)\n\tmetav1.AddToGroupVersion", 1),
		"no call":               strings.Replace(selfRegisteringRegister, "scheme.AddKnownTypes(SchemeGroupVersion,", "scheme.AddKnownTypeWithName(SchemeGroupVersion.WithKind(\"Widget\"), &Widget{})\n\t_ = append([]runtime.Object{},", 1),
		"a build constraint":    "//go:build linux\n\n" + selfRegisteringRegister,
	} {
		op, _ := initOperator(t, map[string]string{"apis/example/v1/register.go": register})
		_, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "&Gadget{} and &GadgetList{} must join the types it registers", name)
		assert.Contains(t, err.Error(), "nothing written", name)
	}
}

// mustRenderInit renders init's template name for example.com/v1/Widget.
func mustRenderInit(t *testing.T, name string) string {
	t.Helper()
	s := &scaffold{Name: "widget-operator"}
	require.NoError(t, s.complete("example.com/v1/Widget"))
	s.Module = "example.com/op"
	src, err := render(name, s)
	require.NoError(t, err)
	return string(src)
}
