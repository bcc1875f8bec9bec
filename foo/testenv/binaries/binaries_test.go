package binaries

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

func readModFile(t *testing.T, rel string) *modfile.File {
	t.Helper()
	src, err := SourceDir()
	require.NoError(t, err)
	path := filepath.Join(src, rel, "go.mod")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := modfile.Parse(path, data, nil)
	require.NoError(t, err)
	return f
}

func required(f *modfile.File) map[string]string {
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out
}

// The pinned constants must be what the tools modules actually build.
func TestPinsMatchToolModules(t *testing.T) {
	kube := readModFile(t, "tools/kube")
	kwok := readModFile(t, "tools/kwok")

	tests := []struct {
		name    string
		mod     *modfile.File
		path    string
		version string
	}{
		{"kubernetes", kube, "k8s.io/kubernetes", KubernetesVersion},
		{"etcd", kube, "go.etcd.io/etcd/server/v3", EtcdVersion},
		{"kwok", kwok, "sigs.k8s.io/kwok", KwokVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.version, required(tt.mod)[tt.path])
		})
	}

	t.Run("every staging module replaced by the staging version", func(t *testing.T) {
		require.NotEmpty(t, kube.Replace)
		for _, r := range kube.Replace {
			assert.True(t, strings.HasPrefix(r.Old.Path, "k8s.io/"), r.Old.Path)
			assert.Equal(t, r.Old.Path, r.New.Path)
			assert.Equal(t, StagingVersion, r.New.Version, r.Old.Path)
		}
	})
	t.Run("staging version matches the kubernetes minor and patch", func(t *testing.T) {
		assert.Equal(t, strings.TrimPrefix(KubernetesVersion, "v1."), strings.TrimPrefix(StagingVersion, "v0."))
	})
}

func TestArtifactsCoverSet(t *testing.T) {
	dir := t.TempDir()
	set := setIn(dir)
	paths := map[string]bool{
		set.Etcd: true, set.KubeAPIServer: true, set.KubeControllerManager: true,
		set.KubeScheduler: true, set.Kwok: true, set.KwokStages: true,
	}
	var names []string
	for _, a := range Artifacts() {
		p := filepath.Join(dir, a.FileName())
		assert.True(t, paths[p], "artifact %s is not in Set", p)
		names = append(names, a.FileName())
	}
	assert.Len(t, names, len(paths))
	assert.Contains(t, names, "kube-apiserver-"+KubernetesVersion)
	assert.Contains(t, names, "kwok-stages-"+KwokVersion+".yaml")
}

func TestLocate(t *testing.T) {
	tests := []struct {
		name        string
		present     []string
		wantMissing int
	}{
		{name: "empty cache", present: nil, wantMissing: len(Artifacts())},
		{name: "one missing", present: fileNames()[1:], wantMissing: 1},
		{name: "complete", present: fileNames(), wantMissing: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.present {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o755))
			}
			set, err := Locate(Options{Dir: dir})
			if tt.wantMissing == 0 {
				require.NoError(t, err)
				assert.Equal(t, setIn(dir), set)
				return
			}
			var missing *MissingError
			require.True(t, errors.As(err, &missing), "error %v", err)
			assert.Len(t, missing.Missing, tt.wantMissing)
			assert.Contains(t, err.Error(), "build-binaries.sh")
		})
	}
}

// Ensure must not build (or even need the toolchain for) what is present.
func TestEnsureKeepsPresentArtifacts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range fileNames() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o755))
	}
	var progress strings.Builder
	set, err := Ensure(context.Background(), Options{Dir: dir, SourceDir: "/nonexistent", Progress: &progress})
	require.NoError(t, err)
	assert.Equal(t, setIn(dir), set)
	assert.Empty(t, progress.String(), "nothing to report")
}

// A failed build leaves neither the target nor its temporary file.
func TestEnsureFailedBuildLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir() // no tools modules inside: every build fails
	_, err := Ensure(context.Background(), Options{Dir: dir, SourceDir: src})
	require.Error(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestVersionLDFlags(t *testing.T) {
	got := versionLDFlags("v1.37.1")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v1.37.1",
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=37",
		"-X k8s.io/client-go/pkg/version.gitVersion=v1.37.1",
	} {
		assert.Contains(t, got, want)
	}
}

func TestSourceDir(t *testing.T) {
	dir, err := SourceDir()
	require.NoError(t, err)
	assert.True(t, isTestenvDir(dir))
	assert.DirExists(t, filepath.Join(dir, "tools", "kube"))
}

func fileNames() []string {
	var out []string
	for _, a := range Artifacts() {
		out = append(out, a.FileName())
	}
	return out
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "module github.com/ctrlkit/ctrlkit\n"))
	src, err := SourceDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "foo", "testenv"), src)
}
