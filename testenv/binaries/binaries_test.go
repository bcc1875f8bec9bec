package binaries

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

func readRecipeMod(t *testing.T, recipe string) *modfile.File {
	t.Helper()
	name := "recipes/" + recipe + "/go.mod.in"
	data, err := recipes.ReadFile(name)
	require.NoError(t, err)
	f, err := modfile.Parse(name, data, nil)
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

// The pinned constants must be what the recipes actually build.
func TestPinsMatchRecipes(t *testing.T) {
	kube := readRecipeMod(t, recipeKube)
	kwok := readRecipeMod(t, recipeKwok)

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
	t.Run("every Kubernetes command built is a tool of the recipe", func(t *testing.T) {
		var tools []string
		for _, tool := range kube.Tool {
			tools = append(tools, tool.Path)
		}
		for _, a := range Artifacts() {
			if strings.HasPrefix(a.Package, "k8s.io/kubernetes/cmd/") {
				assert.Contains(t, tools, a.Package)
			}
		}
	})
}

func TestArtifactsCoverSet(t *testing.T) {
	dir := t.TempDir()
	set := setIn(dir)
	paths := map[string]bool{
		set.Etcd: true, set.KubeAPIServer: true, set.KubeControllerManager: true,
		set.KubeScheduler: true, set.Kubectl: true, set.Kwok: true, set.KwokStages: true,
	}
	var got []string
	for _, a := range Artifacts() {
		p := artifactPath(dir, a)
		assert.True(t, paths[p], "artifact %s is not in Set", p)
		got = append(got, p)
	}
	assert.Len(t, got, len(paths))
	assert.Equal(t, filepath.Join(dir, "kube-"+KubernetesVersion+"-"+recipeHash(recipeKube), "kubectl"), set.Kubectl)
	assert.Equal(t, filepath.Join(dir, "kwok-"+KwokVersion+"-"+recipeHash(recipeKwok), "kwok-stages.yaml"), set.KwokStages)
}

func TestRecipeHash(t *testing.T) {
	assert.Len(t, recipeHash(recipeKube), 8)
	assert.NotEqual(t, recipeHash(recipeKube), recipeHash(recipeKwok))
	assert.Equal(t, recipeHash(recipeKube), recipeHash(recipeKube), "stable")
}

// The written recipe is a complete module: go.mod and go.sum without the
// ".in" suffix, and the main packages it builds.
func TestWriteRecipe(t *testing.T) {
	dir := t.TempDir()
	src, err := writeRecipe(dir, recipeKube)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, recipeDir(recipeKube), "src"), src)
	for _, f := range []string{"go.mod", "go.sum", "etcd/main.go"} {
		assert.FileExists(t, filepath.Join(src, f))
	}
	data, err := os.ReadFile(filepath.Join(src, "go.mod"))
	require.NoError(t, err)
	_, err = modfile.Parse("go.mod", data, nil)
	assert.NoError(t, err)
}

func TestResolveDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(EnvDir, "")
	tests := []struct {
		name string
		opts Options
		env  string
		want string
	}{
		{"default: the user's cache dir", Options{}, "", filepath.Join(cache, "ctrlkit-testenv", runtime.GOOS+"-"+runtime.GOARCH)},
		{"environment", Options{}, "/tmp/from-env", "/tmp/from-env"},
		{"option wins", Options{Dir: "/tmp/from-option"}, "/tmp/from-env", "/tmp/from-option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvDir, tt.env)
			got, err := resolveDir(tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// present creates empty files for every artifact but the first skip ones.
func present(t *testing.T, dir string, skip int) {
	t.Helper()
	for _, a := range Artifacts()[skip:] {
		p := artifactPath(dir, a)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o755))
	}
}

func TestLocate(t *testing.T) {
	all := len(Artifacts())
	tests := []struct {
		name        string
		skip        int
		wantMissing int
	}{
		{name: "empty cache", skip: all, wantMissing: all},
		{name: "one missing", skip: 1, wantMissing: 1},
		{name: "complete", skip: 0, wantMissing: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			present(t, dir, tt.skip)
			set, err := Locate(Options{Dir: dir})
			if tt.wantMissing == 0 {
				require.NoError(t, err)
				assert.Equal(t, setIn(dir), set)
				return
			}
			var missing *MissingError
			require.True(t, errors.As(err, &missing), "error %v", err)
			assert.Len(t, missing.Missing, tt.wantMissing)
			assert.Contains(t, err.Error(), BuildCommand)
			if tt.wantMissing == 1 {
				assert.Contains(t, err.Error(), filepath.Join(recipeDir(Artifacts()[0].Recipe), Artifacts()[0].Name))
			} else {
				assert.Contains(t, err.Error(), "none is built yet")
			}
		})
	}
}

// Ensure must not build, lock or print anything when all is present.
func TestEnsureKeepsPresentArtifacts(t *testing.T) {
	dir := t.TempDir()
	present(t, dir, 0)
	var progress strings.Builder
	set, err := ensure(t.Context(), Options{Dir: dir, Progress: &progress}, Artifacts(),
		func(context.Context, string, Artifact, string, io.Writer) error {
			return errors.New("nothing should be built")
		})
	require.NoError(t, err)
	assert.Equal(t, setIn(dir), set)
	assert.Empty(t, progress.String(), "nothing to report")
	assert.NoFileExists(t, filepath.Join(dir, ".lock"))
}

// Only what is missing is built, and the progress names it.
func TestEnsureBuildsOnlyMissing(t *testing.T) {
	dir := t.TempDir()
	present(t, dir, 2)
	var built []string
	var progress strings.Builder
	set, err := ensure(t.Context(), Options{Dir: dir, Progress: &progress}, Artifacts(),
		func(_ context.Context, _ string, a Artifact, target string, _ io.Writer) error {
			built = append(built, a.Name)
			return os.WriteFile(target, []byte("built"), 0o755)
		})
	require.NoError(t, err)
	assert.Equal(t, []string{Artifacts()[0].Name, Artifacts()[1].Name}, built)
	assert.Equal(t, setIn(dir), set)
	assert.Contains(t, progress.String(), "building "+filepath.Join(recipeDir(recipeKube), "kube-apiserver"))
	assert.Contains(t, progress.String(), "built    "+filepath.Join(recipeDir(recipeKube), "kube-controller-manager"))
}

// A failed build leaves neither the target nor its temporary file.
func TestBuildFailureLeavesNothing(t *testing.T) {
	moduleDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "go.mod"), []byte("module example.com/broken\n\ngo 1.26.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644))
	out := t.TempDir()
	for _, a := range []Artifact{
		{Name: "compiled", Package: "."},
		{Name: "generated", Package: ".", Run: true},
	} {
		t.Run(a.Name, func(t *testing.T) {
			target := filepath.Join(out, a.Name)
			err := build(t.Context(), a, moduleDir, target, io.Discard, time.Hour)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "undefined")
			assert.NoFileExists(t, target)
			assert.NoFileExists(t, target+".tmp")
		})
	}
}

// A build that works: the file appears only under its final name.
func TestBuildSuccess(t *testing.T) {
	moduleDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"kind: Stage\\n\") }\n"), 0o644))
	target := filepath.Join(t.TempDir(), "stages.yaml")
	require.NoError(t, build(t.Context(), Artifact{Name: "stages.yaml", Package: ".", Run: true}, moduleDir, target, io.Discard, time.Hour))
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "kind: Stage\n", string(data))
	assert.NoFileExists(t, target+".tmp")
}

// A wait for the lock ends with the context.
func TestLockWaitEndsWithContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(t.Context(), dir, io.Discard)
	require.NoError(t, err)
	defer unlock()

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var progress strings.Builder
	_, err = lockDir(ctx, dir, &progress)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, progress.String(), "waiting for another process building in "+dir)
}

// Environment of the helper process of TestEnsureAcrossProcesses.
const (
	helperDirEnv  = "BINARIES_TEST_HELPER_DIR"
	helperGateEnv = "BINARIES_TEST_HELPER_GATE"
)

// TestMain turns the test binary into the helper process when asked: it
// ensures two fake artifacts whose "build" waits for a gate file and records
// each build in builds.log.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		os.Exit(helperEnsure(dir, os.Getenv(helperGateEnv)))
	}
	os.Exit(m.Run())
}

func fakeArtifacts() []Artifact {
	return []Artifact{
		{Name: "one", Recipe: recipeKube, Package: "example.com/one"},
		{Name: "two", Recipe: recipeKube, Package: "example.com/two"},
	}
}

func helperEnsure(dir, gate string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := ensure(ctx, Options{Dir: dir, Progress: os.Stderr}, fakeArtifacts(),
		func(ctx context.Context, _ string, a Artifact, target string, _ io.Writer) error {
			for {
				if _, err := os.Stat(gate); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			log, err := os.OpenFile(filepath.Join(dir, "builds.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			fmt.Fprintf(log, "%s by %d\n", a.Name, os.Getpid())
			if err := log.Close(); err != nil {
				return err
			}
			return os.WriteFile(target, []byte(a.Name), 0o755)
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// Two processes ensuring the same cache at once: one builds each artifact,
// the other waits for it and uses the result; nothing is built twice.
func TestEnsureAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "go")
	exe, err := os.Executable()
	require.NoError(t, err)

	// Each process writes its progress to a file of its own, which the
	// test reads while the process runs.
	var outputs [2]string
	var cmds [2]*exec.Cmd
	for i := range cmds {
		outputs[i] = filepath.Join(t.TempDir(), "stderr")
		out, err := os.Create(outputs[i])
		require.NoError(t, err)
		defer out.Close()
		cmds[i] = exec.Command(exe, "-test.run=^$")
		cmds[i].Env = append(os.Environ(), helperDirEnv+"="+dir, helperGateEnv+"="+gate)
		cmds[i].Stderr = out
		require.NoError(t, cmds[i].Start())
		t.Cleanup(func() { _ = cmds[i].Process.Kill() })
	}
	output := func(i int) string {
		data, _ := os.ReadFile(outputs[i])
		return string(data)
	}

	// Hold the gate until one process builds and the other waits for it.
	require.Eventually(t, func() bool {
		a, b := output(0), output(1)
		return (strings.Contains(a, "building") && strings.Contains(b, "waiting for another process")) ||
			(strings.Contains(b, "building") && strings.Contains(a, "waiting for another process"))
	}, 30*time.Second, 20*time.Millisecond, "outputs: %q / %q", output(0), output(1))
	require.NoError(t, os.WriteFile(gate, nil, 0o644))

	for i, cmd := range cmds {
		assert.NoError(t, cmd.Wait(), "process %d: %s", i, output(i))
	}
	log, err := os.ReadFile(filepath.Join(dir, "builds.log"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	require.Len(t, lines, 2, "each artifact built once: %q", log)
	assert.True(t, strings.HasPrefix(lines[0], "one by "))
	assert.True(t, strings.HasPrefix(lines[1], "two by "))
	assert.Empty(t, missingOf(dir, fakeArtifacts()))
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

// An empty file (what a crash between create and write leaves) is missing.
func TestEmptyFileIsMissing(t *testing.T) {
	dir := t.TempDir()
	present(t, dir, 0)
	require.NoError(t, os.WriteFile(artifactPath(dir, Artifacts()[0]), nil, 0o755))
	_, err := Locate(Options{Dir: dir})
	var missing *MissingError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, []string{filepath.Join(recipeDir(Artifacts()[0].Recipe), Artifacts()[0].Name)}, missing.Missing)
}

// An API-server-only control plane needs etcd, kube-apiserver and kubectl:
// Locate finds them with the rest of the cache empty, Ensure builds only
// them, and a name that is no artifact is refused.
func TestOnly(t *testing.T) {
	dir := t.TempDir()
	for _, a := range Artifacts() {
		if slices.Contains(APIServerOnly, a.Name) {
			p := artifactPath(dir, a)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o755))
		}
	}
	set, err := Locate(Options{Dir: dir, Only: APIServerOnly})
	require.NoError(t, err)
	assert.Equal(t, setIn(dir), set)

	_, err = Locate(Options{Dir: dir})
	var missing *MissingError
	require.ErrorAs(t, err, &missing)
	assert.Len(t, missing.Missing, len(Artifacts())-len(APIServerOnly))

	empty := t.TempDir()
	selected, err := Options{Only: APIServerOnly}.selected()
	require.NoError(t, err)
	var built []string
	_, err = ensure(t.Context(), Options{Dir: empty, Progress: io.Discard}, selected,
		func(_ context.Context, _ string, a Artifact, target string, _ io.Writer) error {
			built = append(built, a.Name)
			return os.WriteFile(target, []byte("built"), 0o755)
		})
	require.NoError(t, err)
	assert.ElementsMatch(t, APIServerOnly, built)

	_, err = Locate(Options{Dir: dir, Only: []string{"kube-proxy"}})
	assert.ErrorContains(t, err, `no artifact named "kube-proxy"`)
	_, err = Ensure(t.Context(), Options{Dir: dir, Only: []string{"kube-proxy"}})
	assert.ErrorContains(t, err, `no artifact named "kube-proxy"`)
}

// The programs are built without cgo and linked without DWARF: the two
// settings that make their first build shorter.
func TestBuildFlags(t *testing.T) {
	moduleDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "go.mod"), []byte("module example.com/small\n\ngo 1.26.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(moduleDir, "main.go"), []byte("package main\n\nimport \"net\"\n\nfunc main() { _, _ = net.LookupHost(\"localhost\") }\n"), 0o644))
	target := filepath.Join(t.TempDir(), "small")
	require.NoError(t, build(t.Context(), Artifact{Name: "small", Package: "."}, moduleDir, target, io.Discard, time.Hour))

	info, err := buildinfo.ReadFile(target)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "0", settings["CGO_ENABLED"])
	assert.Contains(t, settings["-ldflags"], "-s -w")
	assert.Equal(t, "all=-dwarf=false", settings["-gcflags"])
	f, err := elf.Open(target)
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, f.Section(".debug_info"), "DWARF")
	assert.Nil(t, f.Section(".symtab"), "symbol table")
}
