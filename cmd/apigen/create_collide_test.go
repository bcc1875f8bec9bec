package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Create api with a new kind whose names collide with the operator's kind
// (its list type WidgetList, its plural Widgets, the same CRD
// widgets.example.com and client method Widgets()) either is refused with
// nothing written, as bad input is, or makes an operator that builds; it
// never leaves a half-written module.
func TestCreateAPICollidingKind(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"example.com/v1/WidgetList", "example.com/v2/Widgets"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			dir := widgetOperator(t)
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", api)
			if code != 0 {
				assert.Equal(t, before, tree(t, dir), "%s: refused (%s), with the module as it was", api, lastLine(stderr))
				assert.Equal(t, beforeDirs, dirs(t, dir), "%s: no directory left behind", api)
				return
			}
			cmd := exec.CommandContext(t.Context(), "go", "build", "./...")
			cmd.Dir = dir
			cmd.Env = commandEnviron("GOWORK=off", "GOFLAGS=")
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s: create succeeded (stdout: %s), then go build:\n%s", api, stdout, out)
			var crds []string
			for rel := range tree(t, dir) {
				if strings.HasPrefix(rel, "deploy/crd/") {
					crds = append(crds, rel)
				}
			}
			assert.Len(t, crds, 2, "%s: a CRD of each kind: %q", api, crds)
		})
	}
}

// Create api with a new kind named like a name that register-gen declares
// in its API package (zz_generated.register.go's func Resource(string)
// schema.GroupResource, SchemeBuilder, AddToScheme, ...) is refused before
// anything is written, as bad input is, naming the clash.
func TestCreateAPIRefusesKindNamedLikeRegisterGenName(t *testing.T) {
	t.Parallel()
	dir := widgetOperator(t)
	before := tree(t, dir)
	code, stdout, stderr := apigenIn(t, dir, nil, "create", "api", "-api", "example.com/v1/Resource")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.NotContains(t, stdout, "apigen create: wrote", "refused before anything is written")
	assert.Contains(t, stderr, "register", "the error names the clash with the generated register:\n%s", stderr)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
