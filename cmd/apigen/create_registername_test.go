package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// A hub package that registers its types itself (SchemeGroupVersion in
// its own code, as examples/bucket's do; apigen then runs no register-gen
// for it) declares GroupName itself. A method of the kind that uses it,
// which create api copies now with the constants it uses, brings
// "const GroupName" into the new version's package, where register-gen
// (which the new version, declaring no SchemeGroupVersion, gets) declares
// GroupName too: the new version does not build, and create api fails.
func TestCreatedVersionOfSelfRegisteringHubBuilds(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	v1 := filepath.Join(dir, "apis/example/v1")
	gen := filepath.Join(v1, "zz_generated.register.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	// The register code becomes the user's own.
	b = regexp.MustCompile(`(?m)^// Code generated .*\n`).ReplaceAll(b, nil)
	require.NoError(t, os.WriteFile(filepath.Join(v1, "register.go"), b, 0o644))
	require.NoError(t, os.Remove(gen))
	require.NoError(t, os.WriteFile(filepath.Join(v1, "widget_resource.go"), []byte(`package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupResource is the group and resource of widgets.
func (w *Widget) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: GroupName, Resource: "widgets"}
}
`), 0o644))
	goIn(t, dir, "generate", "./...")
	goIn(t, dir, "build", "./...")
	_, err = os.Stat(gen)
	require.True(t, os.IsNotExist(err), "v1 registers itself: no register-gen for it")
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v2/Widget")
	require.Equal(t, 0, code, "create api\nstdout: %s\nstderr: %s", stdout, stderr)
	goIn(t, dir, "build", "./...")
}
