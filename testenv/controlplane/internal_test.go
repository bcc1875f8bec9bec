package controlplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLastLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"fewer lines than asked", "a\nb\n", 5, "a\nb"},
		{"exact", "a\nb\nc", 3, "a\nb\nc"},
		{"tail", "a\nb\nc\nd\n", 2, "c\nd"},
		{"trailing blank lines ignored", "a\nb\n\n\n", 1, "b"},
		{"all when n is zero", "a\nb\n", 0, "a\nb\n"},
		{"empty", "", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, lastLines(tt.in, tt.n))
		})
	}
}

func TestWriteTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, writeTokenFile(path, []User{
		{Name: "admin", Token: "t1", Groups: []string{"system:masters"}},
		{Name: "alice", UID: "u-2", Token: "t2", Groups: []string{"dev", "ops"}},
		{Name: "bob", Token: "t3"},
	}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "t1,admin,admin,system:masters\nt2,alice,u-2,\"dev,ops\"\nt3,bob,bob\n", string(data))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestNewTokenIsRandom(t *testing.T) {
	a, err := newToken()
	require.NoError(t, err)
	b, err := newToken()
	require.NoError(t, err)
	assert.Len(t, a, 48)
	assert.NotEqual(t, a, b)
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(5)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.Positive(t, p)
		assert.False(t, seen[p], "port %d twice", p)
		seen[p] = true
	}
}

func TestReadCRDs(t *testing.T) {
	const crdA = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
`
	const crdB = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"}}`
	tests := []struct {
		name    string
		files   map[string]string
		want    []string
		wantErr string
	}{
		{
			name:  "yaml and json, other files ignored",
			files: map[string]string{"a.yaml": crdA, "b.json": crdB, "README.md": "# not a CRD"},
			want:  []string{"widgets.example.com", "gadgets.example.com"},
		},
		{
			name: "a kustomization beside the CRDs is not read",
			files: map[string]string{"a.yaml": crdA,
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a.yaml\n"},
			want: []string{"widgets.example.com"},
		},
		{
			name:  "several documents and empty ones",
			files: map[string]string{"all.yml": "---\n" + crdA + "---\n---\n" + strings.ReplaceAll(crdA, "widgets", "things")},
			want:  []string{"widgets.example.com", "things.example.com"},
		},
		{
			name:    "other kinds are an error",
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
			wantErr: `kind "ConfigMap" is not CustomResourceDefinition`,
		},
		{
			name:    "broken yaml is an error",
			files:   map[string]string{"bad.yaml": "kind: [\n"},
			wantErr: "bad.yaml",
		},
		{name: "empty directory", files: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			crds, err := ReadCRDs(dir)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, c := range crds {
				names = append(names, c.Name)
			}
			assert.Equal(t, tt.want, names)
		})
	}
	_, err := ReadCRDs(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	t.Run("files and directories in the order given", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(crdA), 0o644))
		file := filepath.Join(t.TempDir(), "gadget.crd") // any name
		require.NoError(t, os.WriteFile(file, []byte(crdB), 0o644))
		crds, err := ReadCRDs(file, dir)
		require.NoError(t, err)
		require.Len(t, crds, 2)
		assert.Equal(t, "gadgets.example.com", crds[0].Name)
		assert.Equal(t, "widgets.example.com", crds[1].Name)
	})
}

// stop must take down the whole process group, including children the
// component started itself, and only return once the leader is reaped.
func TestProcessStopKillsGroup(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"exits on SIGTERM", "sleep 300 & echo $!; wait"},
		{"ignores SIGTERM", "trap '' TERM; sleep 300 & echo $!; while :; do wait; done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := startProcess("sh", "/bin/sh", []string{"-c", tt.script}, os.Environ(), dir)
			require.NoError(t, err)
			var child int
			require.Eventually(t, func() bool {
				data, _ := os.ReadFile(p.logPath)
				child, err = strconv.Atoi(strings.TrimSpace(string(data)))
				return err == nil
			}, 10*time.Second, 10*time.Millisecond)
			require.True(t, processAlive(p.pid()))
			require.True(t, processAlive(child))

			start := time.Now()
			p.stop(300 * time.Millisecond)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.True(t, p.exited())
			assert.False(t, processAlive(p.pid()), "leader %d left", p.pid())
			assert.Eventually(t, func() bool { return !processAlive(child) }, 5*time.Second, 10*time.Millisecond, "child %d left", child)
			assert.Contains(t, p.tail(5), strconv.Itoa(child))
		})
	}
}
