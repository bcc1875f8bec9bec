// Package binaries pins, locates and builds the programs a test control plane
// runs (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)
// and kubectl.
//
// Everything is built from source fetched through the Go module proxy; nothing
// else is downloaded. The build recipes (a go.mod, its go.sum and two tiny
// main packages) are embedded in this package, so a module that imports it
// builds the same binaries as this repository does.
//
// Builds land in one cache per machine and user, shared by every clone and
// every module that imports this package: by default
// <user cache dir>/ctrlkit-testenv/<GOOS>-<GOARCH>, or $CTRLKIT_TESTENV_BIN_DIR.
// Inside it each recipe has a directory named by its pinned version and a
// hash of the recipe (for example kube-v1.37.1-1a2b3c4d), so changing a pin
// builds anew and never mixes versions. Builds are made only when missing,
// under a file lock: several test processes may call Ensure at once, one
// builds and the others wait for it.
//
//	set, err := binaries.Ensure(ctx, binaries.Options{})
//	if err != nil {
//		return err
//	}
//	fmt.Println(set.Kubectl) // ~/.cache/ctrlkit-testenv/linux-amd64/kube-v1.37.1-.../kubectl
package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Pinned versions. They must match the requirements in the embedded recipes
// (recipes/kube/go.mod.in and recipes/kwok/go.mod.in); a unit test keeps them
// in step.
const (
	// KubernetesVersion is the k8s.io/kubernetes release the API server,
	// controller-manager, scheduler and kubectl are built from.
	KubernetesVersion = "v1.37.1"
	// StagingVersion is the tag every k8s.io staging module is replaced with
	// when building KubernetesVersion.
	StagingVersion = "v0.37.1"
	// EtcdVersion is the go.etcd.io/etcd/server/v3 release, the one
	// KubernetesVersion itself requires.
	EtcdVersion = "v3.7.0"
	// KwokVersion is the sigs.k8s.io/kwok release.
	KwokVersion = "v0.8.0"
)

// EnvDir names the environment variable that overrides the cache directory.
const EnvDir = "CTRLKIT_TESTENV_BIN_DIR"

// BuildCommand is the command that fills the cache ahead of a test run, for
// messages and documentation. It works in any module that requires this one.
const BuildCommand = "go run github.com/ctrlkit/ctrlkit/testenv/cmd/build"

// recipes holds one Go module per recipe directory. Its files carry an ".in"
// suffix so that the Go tool treats neither the go.mod as a nested module nor
// the main packages as part of this one.
//
//go:embed recipes
var recipes embed.FS

// Recipe names: the directories under recipes/.
const (
	recipeKube = "kube"
	recipeKwok = "kwok"
)

// Set holds the absolute paths of every built artifact.
type Set struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kubectl               string
	Kwok                  string
	// KwokStages is a YAML stream of kwok Stage objects (node and pod
	// lifecycle) matching the kwok binary.
	KwokStages string
}

// Artifact describes one thing to build.
type Artifact struct {
	// Name is the file name in the recipe's directory, e.g. "kube-apiserver".
	Name string
	// Recipe is the embedded module that builds it.
	Recipe string
	// Package is the package to build, or, when Run is set, to run.
	Package string
	// LDFlags are passed to the linker.
	LDFlags string
	// Run, when set, means the artifact is the standard output of
	// `go run Package` rather than a compiled program.
	Run bool
}

// Artifacts lists everything Ensure builds, in build order: the largest
// first so later ones reuse its compiled packages.
func Artifacts() []Artifact {
	kubeLD := versionLDFlags(KubernetesVersion)
	return []Artifact{
		{Name: "kube-apiserver", Recipe: recipeKube, Package: "k8s.io/kubernetes/cmd/kube-apiserver", LDFlags: kubeLD},
		{Name: "kube-controller-manager", Recipe: recipeKube, Package: "k8s.io/kubernetes/cmd/kube-controller-manager", LDFlags: kubeLD},
		{Name: "kube-scheduler", Recipe: recipeKube, Package: "k8s.io/kubernetes/cmd/kube-scheduler", LDFlags: kubeLD},
		{Name: "kubectl", Recipe: recipeKube, Package: "k8s.io/kubernetes/cmd/kubectl", LDFlags: kubeLD},
		{Name: "etcd", Recipe: recipeKube, Package: "./etcd"},
		{Name: "kwok", Recipe: recipeKwok, Package: "sigs.k8s.io/kwok/cmd/kwok"},
		{Name: "kwok-stages.yaml", Recipe: recipeKwok, Package: "./stages", Run: true},
	}
}

// versionLDFlags stamps the Kubernetes version into the binaries so that
// /version, kubectl version and the component logs report it instead of
// v0.0.0-master.
func versionLDFlags(v string) string {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var b strings.Builder
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, "-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean ",
			pkg, v, pkg, major, pkg, minor, pkg)
	}
	return strings.TrimSpace(b.String())
}

// recipeVersion is the version a recipe's directory is named after.
func recipeVersion(recipe string) string {
	if recipe == recipeKwok {
		return KwokVersion
	}
	return KubernetesVersion
}

// recipeDir is the directory, relative to the cache, that holds a recipe's
// artifacts: its version and a hash of its embedded files.
func recipeDir(recipe string) string {
	return recipe + "-" + recipeVersion(recipe) + "-" + recipeHash(recipe)
}

// recipeHash is a short hash of a recipe's files and of the artifacts built
// from it, so that any change to either gets a directory of its own. The
// platform is in the cache directory's name.
func recipeHash(recipe string) string { return recipeHashes()[recipe] }

// recipeHashes computes every recipe's hash once: the embedded files do not
// change while the program runs.
var recipeHashes = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	for _, recipe := range []string{recipeKube, recipeKwok} {
		h := sha256.New()
		var names []string
		_ = fs.WalkDir(recipes, path.Join("recipes", recipe), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		sort.Strings(names)
		for _, n := range names {
			data, _ := recipes.ReadFile(n)
			fmt.Fprintf(h, "%s %d\n", n, len(data))
			h.Write(data)
		}
		fmt.Fprintf(h, "%q %q %q\n", buildEnv, noDWARFGCFlags, strippedLDFlags)
		for _, a := range Artifacts() {
			if a.Recipe == recipe {
				fmt.Fprintf(h, "%s %s %s %t\n", a.Name, a.Package, a.LDFlags, a.Run)
			}
		}
		out[recipe] = hex.EncodeToString(h.Sum(nil))[:8]
	}
	return out
})

// The programs are built for tests, not for debugging them: without cgo
// (none of them needs it, and the go command then compiles no C), compiled
// without DWARF (about a sixth less compile time) and linked without the
// DWARF tables and the symbol table, which the linker would otherwise spend
// a large part of each link writing. Stack traces keep their file and line
// numbers. All of these are part of the recipes' hash.
var buildEnv = []string{"CGO_ENABLED=0"}

const (
	noDWARFGCFlags  = "all=-dwarf=false"
	strippedLDFlags = "-s -w"
)

// Options configures Locate and Ensure. The zero value uses the defaults.
type Options struct {
	// Dir is the cache directory. Default: $CTRLKIT_TESTENV_BIN_DIR, else
	// ctrlkit-testenv/<GOOS>-<GOARCH> in the user's cache directory
	// (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux).
	Dir string
	// Progress receives one line per build step, a heartbeat while a build
	// runs, and a line while waiting for another process's build. Default
	// os.Stderr; io.Discard silences it.
	Progress io.Writer
	// Heartbeat is the interval of "still building" lines. Default 30s.
	Heartbeat time.Duration
	// Only names the artifacts (Artifact.Name) that Locate requires and
	// Ensure builds; empty means all of them. The returned Set still holds
	// the path of every artifact, built or not. An API-server-only control
	// plane needs only APIServerOnly.
	Only []string
}

// APIServerOnly names the artifacts an API-server-only control plane runs
// or offers: etcd, kube-apiserver and kubectl.
var APIServerOnly = []string{"etcd", "kube-apiserver", "kubectl"}

// selected returns the artifacts opts.Only names, all of them when it is
// empty, or an error naming one that does not exist.
func (opts Options) selected() ([]Artifact, error) {
	all := Artifacts()
	if len(opts.Only) == 0 {
		return all, nil
	}
	var out []Artifact
	for _, name := range opts.Only {
		i := slices.IndexFunc(all, func(a Artifact) bool { return a.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("binaries: no artifact named %q", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// MissingError reports artifacts that are not in the cache directory.
type MissingError struct {
	Dir     string
	Missing []string
}

func (e *MissingError) Error() string {
	what := strings.Join(e.Missing, ", ")
	if len(e.Missing) == len(Artifacts()) { // the cache is empty
		what = "none is built yet"
	}
	return fmt.Sprintf("test control plane binaries missing in %s: %s; build them with `%s` (the first build on a machine takes 8 to 11 minutes on 2 cores) or start with BuildMissing",
		e.Dir, what, BuildCommand)
}

// DefaultDir is the cache directory used when neither Options.Dir nor
// $CTRLKIT_TESTENV_BIN_DIR is set.
func DefaultDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the binary cache: %w; set %s", err, EnvDir)
	}
	return filepath.Join(base, "ctrlkit-testenv", runtime.GOOS+"-"+runtime.GOARCH), nil
}

// Locate returns the paths of the built artifacts. If any of those
// opts.Only names (all, by default) is missing, it returns a *MissingError
// naming them and the command that builds them.
func Locate(opts Options) (Set, error) {
	dir, err := resolveDir(opts)
	if err != nil {
		return Set{}, err
	}
	artifacts, err := opts.selected()
	if err != nil {
		return Set{}, err
	}
	if missing := missingOf(dir, artifacts); len(missing) > 0 {
		return Set{}, &MissingError{Dir: dir, Missing: missing}
	}
	return setIn(dir), nil
}

// artifactPath is where an artifact lives in the cache dir.
func artifactPath(dir string, a Artifact) string {
	return filepath.Join(dir, recipeDir(a.Recipe), a.Name)
}

func setIn(dir string) Set {
	paths := map[string]string{}
	for _, a := range Artifacts() {
		paths[a.Name] = artifactPath(dir, a)
	}
	return Set{
		Etcd:                  paths["etcd"],
		KubeAPIServer:         paths["kube-apiserver"],
		KubeControllerManager: paths["kube-controller-manager"],
		KubeScheduler:         paths["kube-scheduler"],
		Kubectl:               paths["kubectl"],
		Kwok:                  paths["kwok"],
		KwokStages:            paths["kwok-stages.yaml"],
	}
}

// Ensure builds every missing artifact of those opts.Only names (all, by
// default) and returns the paths. When nothing
// is missing it returns at once, silently, without taking the lock. Otherwise
// it holds an exclusive lock on the cache directory while it builds, so that
// concurrent callers (in this or other processes) build each artifact once;
// a caller that finds the lock taken reports that it waits and then uses what
// the other built. A build writes to a temporary file and renames it into
// place, so an interrupted build leaves nothing that Locate would accept.
// Cancelling ctx stops a build and a wait.
func Ensure(ctx context.Context, opts Options) (Set, error) {
	sources := map[string]string{}
	artifacts, err := opts.selected()
	if err != nil {
		return Set{}, err
	}
	return ensure(ctx, opts, artifacts, func(ctx context.Context, dir string, a Artifact, target string, progress io.Writer) error {
		src, ok := sources[a.Recipe]
		if !ok {
			var err error
			if src, err = writeRecipe(dir, a.Recipe); err != nil {
				return err
			}
			sources[a.Recipe] = src
		}
		return build(ctx, a, src, target, progress, opts.Heartbeat)
	})
}

// buildFunc makes one artifact at target, under the cache lock.
type buildFunc func(ctx context.Context, dir string, a Artifact, target string, progress io.Writer) error

func ensure(ctx context.Context, opts Options, artifacts []Artifact, buildOne buildFunc) (Set, error) {
	dir, err := resolveDir(opts)
	if err != nil {
		return Set{}, err
	}
	if len(missingOf(dir, artifacts)) == 0 {
		return setIn(dir), nil
	}
	progress := opts.Progress
	if progress == nil {
		progress = os.Stderr
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Set{}, fmt.Errorf("creating binary cache: %w", err)
	}
	unlock, err := lockDir(ctx, dir, progress)
	if err != nil {
		return Set{}, err
	}
	defer unlock()

	for _, a := range artifacts {
		target := artifactPath(dir, a)
		if len(missingOf(dir, []Artifact{a})) == 0 {
			continue // present, or built by whoever held the lock before us
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return Set{}, fmt.Errorf("creating binary cache: %w", err)
		}
		start := time.Now()
		rel := filepath.Join(recipeDir(a.Recipe), a.Name)
		if a.Run {
			fmt.Fprintf(progress, "writing  %s (go run %s) ...\n", rel, a.Package)
		} else {
			fmt.Fprintf(progress, "building %s from the Go module proxy (%s) ...\n", rel, a.Package)
		}
		if err := buildOne(ctx, dir, a, target, progress); err != nil {
			return Set{}, err
		}
		fmt.Fprintf(progress, "built    %s in %s\n", rel, time.Since(start).Round(time.Second))
	}
	return setIn(dir), nil
}

// missingOf names the artifacts not in dir, relative to it.
func missingOf(dir string, artifacts []Artifact) []string {
	var missing []string
	for _, a := range artifacts {
		// An empty file is what a crash between create and write leaves.
		if info, err := os.Stat(artifactPath(dir, a)); err != nil || info.Size() == 0 {
			missing = append(missing, filepath.Join(recipeDir(a.Recipe), a.Name))
		}
	}
	return missing
}

// lockDir takes an exclusive flock on dir/.lock, polling so that ctx can end
// the wait. The lock goes with the process, so a killed builder never leaves
// it held.
func lockDir(ctx context.Context, dir string, progress io.Writer) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the binary cache: %w", err)
	}
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking the binary cache: %w", err)
		}
		if !waiting {
			waiting = true
			fmt.Fprintf(progress, "waiting for another process building in %s ...\n", dir)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for the binary cache lock: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// writeRecipe writes a recipe's module into the cache (dropping the ".in"
// suffixes) and returns its directory.
func writeRecipe(dir, recipe string) (string, error) {
	root := path.Join("recipes", recipe)
	dst := filepath.Join(dir, recipeDir(recipe), "src")
	err := fs.WalkDir(recipes, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := recipes.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".in")
		out := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("writing the %s recipe: %w", recipe, err)
	}
	return dst, nil
}

// build compiles (or runs) one artifact into target through a temporary file.
func build(ctx context.Context, a Artifact, moduleDir, target string, progress io.Writer, heartbeat time.Duration) (err error) {
	tmp := target + ".tmp"
	_ = os.Remove(tmp)
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()

	var cmd *exec.Cmd
	var out *os.File
	if a.Run {
		out, err = os.Create(tmp)
		if err != nil {
			return fmt.Errorf("building %s: %w", a.Name, err)
		}
		defer out.Close()
		cmd = exec.CommandContext(ctx, "go", "run", a.Package)
		cmd.Stdout = out
	} else {
		args := []string{"build", "-o", tmp, "-gcflags", noDWARFGCFlags, "-ldflags", strings.TrimSpace(strippedLDFlags + " " + a.LDFlags)}
		cmd = exec.CommandContext(ctx, "go", append(args, a.Package)...)
	}
	cmd.Dir = moduleDir
	// The recipe modules are standalone: no workspace, no vendoring, and
	// go.sum must already hold every checksum; the caller's GOFLAGS do not
	// apply. The target is the running platform, which names the cache
	// directory, whatever GOOS and GOARCH the environment exports.
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false",
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH), buildEnv...)
	// go run leaves its program running if only go is killed: cancelling
	// ctx kills the whole process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if !a.Run {
		cmd.Stdout = &stderr
	}

	if heartbeat <= 0 {
		heartbeat = 30 * time.Second
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(progress, "         still building %s (%s)\n", a.Name, time.Since(start).Round(time.Second))
			}
		}
	}()
	runErr := cmd.Run()
	close(done)
	<-stopped
	if runErr != nil {
		return fmt.Errorf("building %s in %s: %w\n%s", a.Name, moduleDir, runErr, stderr.String())
	}
	if out != nil {
		if err := out.Close(); err != nil {
			return fmt.Errorf("building %s: %w", a.Name, err)
		}
	}
	// On disk before it gets the name Locate accepts.
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("building %s: %w", a.Name, err)
	}
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("building %s: %w", a.Name, err)
	}
	return syncFile(filepath.Dir(target))
}

// syncFile flushes a file or directory to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func resolveDir(opts Options) (string, error) {
	dir := opts.Dir
	if dir == "" {
		dir = os.Getenv(EnvDir)
	}
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return "", err
		}
	}
	return filepath.Abs(dir)
}
