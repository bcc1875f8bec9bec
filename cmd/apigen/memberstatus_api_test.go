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

// A hub object's status declares its per-member entries as
// docs/multicluster.md shows, a list of fleetv1.MemberStatus keyed by
// cluster: apigen generates its code (the OpenAPI schema has the type of
// another module's package, applyconfiguration-gen finds it) and the CRD
// lists the entry's fields as a list-map keyed by cluster.
func TestMemberStatusInAnAPIType(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	p := filepath.Join(dir, "apis/things/v1/types.go")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	text := strings.Replace(string(data), `import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"`,
		"import (\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n\t\"github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1\"\n)", 1)
	text = strings.Replace(text, "type ThingStatus struct {\n\tSize int32 `json:\"size,omitempty\"`\n}",
		"type ThingStatus struct {\n\tSize int32 `json:\"size,omitempty\"`\n"+
			"\t// Members is where the Thing stands in each member cluster.\n"+
			"\t// +optional\n\t// +listType=map\n\t// +listMapKey=cluster\n"+
			"\tMembers []fleetv1.MemberStatus `json:\"members,omitempty\"`\n}", 1)
	require.Contains(t, text, "fleetv1.MemberStatus")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	goCmd(t, dir, "mod", "edit", "-require", "github.com/ctrlkit/ctrlkit@v0.0.0", "-replace", "github.com/ctrlkit/ctrlkit="+root)
	tidy := exec.CommandContext(t.Context(), "go", "mod", "tidy", "-e")
	tidy.Dir = dir
	// Offline, from the module cache: the library's requirements the
	// fixture's go.sum has no line for (golang.org/x/net's newer version)
	// are not looked up in the checksum database, which GOPROXY=off does
	// not reach; the cache verified them when it downloaded them.
	tidy.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
	out, err := tidy.CombinedOutput()
	require.NoError(t, err, "%s", out)
	goCmd(t, dir, "build", "./apis/...")

	code, _, stderr := apigen(t, dir, "-crd", "config/crd")
	if i := strings.Index(stderr, "\ngoroutine "); i > 0 {
		stderr = stderr[:i]
	}
	require.Equal(t, 0, code, "stderr: %s", stderr)
	crd, err := os.ReadFile(filepath.Join(dir, "config/crd/example.com_things.yaml"))
	if assert.NoError(t, err) {
		for _, want := range []string{"members:", "cluster:", "ready:", "reason:", "message:", "observedGeneration:", "x-kubernetes-list-type: map"} {
			assert.Contains(t, string(crd), want)
		}
		assert.Regexp(t, `x-kubernetes-list-map-keys:\s+- cluster\n`, string(crd))
	}
}
