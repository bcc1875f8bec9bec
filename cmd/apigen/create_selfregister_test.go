package main

import (
	"maps"
	"os"
	"path/filepath"
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
		_, err := op.planAPI(t.Context(), api)
		if want == "" {
			assert.NoError(t, err, api)
			continue
		}
		require.Error(t, err, api)
		assert.Contains(t, err.Error(), want, api)
	}
}
