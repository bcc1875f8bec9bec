// Package binaries pins, locates and builds the programs a test control plane
// runs: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
//
// Everything is built from source fetched through the Go module proxy by the
// small modules under foo/testenv/tools; nothing else is downloaded. Builds land
// in a cache directory keyed by name and version (for example
// .bin/kube-apiserver-v1.37.1) and are made only when missing, one at a time.
//
//	set, err := binaries.Ensure(ctx, binaries.Options{Progress: os.Stderr})
//	if err != nil {
//		return err
//	}
//	fmt.Println(set.KubeAPIServer) // .../foo/testenv/.bin/kube-apiserver-v1.37.1
package binaries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Pinned versions. They must match the requirements in tools/kube/go.mod and
// tools/kwok/go.mod; a unit test keeps them in step.
const (
	// KubernetesVersion is the k8s.io/kubernetes release the API server,
	// controller-manager and scheduler are built from.
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

// Environment variables that override the defaults.
const (
	// EnvDir names the cache directory for built binaries.
	EnvDir = "CTRLKIT_TESTENV_BIN_DIR"
	// EnvSourceDir names the foo/testenv directory (the one holding tools/).
	// It is needed only when the source location cannot be derived from the
	// build, for example in a binary built with -trimpath outside the tree.
	EnvSourceDir = "CTRLKIT_TESTENV_DIR"
)

// testenvModule is the module path whose go.mod marks the source directory.
const testenvModule = "github.com/ctrlkit/ctrlkit/foo/testenv"

// Set holds the absolute paths of every built artifact.
type Set struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	// KwokStages is a YAML stream of kwok Stage objects (node and pod
	// lifecycle) matching the kwok binary.
	KwokStages string
}

// Artifact describes one thing to build.
type Artifact struct {
	// Name is the program name, e.g. "kube-apiserver".
	Name string
	// Version is the pinned version; together with Name it forms the file
	// name in the cache directory.
	Version string
	// ModuleDir is the directory of the building module, relative to the
	// foo/testenv source directory.
	ModuleDir string
	// Package is the package to build, or, when Run is set, to run.
	Package string
	// LDFlags are passed to the linker.
	LDFlags string
	// Run, when set, means the artifact is the standard output of
	// `go run Package` rather than a compiled program.
	Run bool
	// Ext is appended to the file name (".yaml" for generated files).
	Ext string
}

// FileName is the artifact's file name in the cache directory.
func (a Artifact) FileName() string { return a.Name + "-" + a.Version + a.Ext }

// Artifacts lists everything Ensure builds, in build order: the largest
// first so later ones reuse its compiled packages.
func Artifacts() []Artifact {
	kubeLD := versionLDFlags(KubernetesVersion)
	return []Artifact{
		{Name: "kube-apiserver", Version: KubernetesVersion, ModuleDir: "tools/kube", Package: "k8s.io/kubernetes/cmd/kube-apiserver", LDFlags: kubeLD},
		{Name: "kube-controller-manager", Version: KubernetesVersion, ModuleDir: "tools/kube", Package: "k8s.io/kubernetes/cmd/kube-controller-manager", LDFlags: kubeLD},
		{Name: "kube-scheduler", Version: KubernetesVersion, ModuleDir: "tools/kube", Package: "k8s.io/kubernetes/cmd/kube-scheduler", LDFlags: kubeLD},
		{Name: "etcd", Version: EtcdVersion, ModuleDir: "tools/kube", Package: "./etcd"},
		{Name: "kwok", Version: KwokVersion, ModuleDir: "tools/kwok", Package: "sigs.k8s.io/kwok/cmd/kwok"},
		{Name: "kwok-stages", Version: KwokVersion, ModuleDir: "tools/kwok", Package: "./stages", Run: true, Ext: ".yaml"},
	}
}

// versionLDFlags stamps the Kubernetes version into the binaries so that
// /version and the component logs report it instead of v0.0.0-master.
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

// Options configures Locate and Ensure. The zero value uses the defaults.
type Options struct {
	// Dir is the cache directory. Default: $CTRLKIT_TESTENV_BIN_DIR, or
	// .bin inside the foo/testenv source directory.
	Dir string
	// SourceDir is the foo/testenv source directory. Default:
	// $CTRLKIT_TESTENV_DIR, else derived from this package's source location,
	// else found by walking up from the working directory.
	SourceDir string
	// Progress receives one line per build step and a heartbeat while a
	// build runs. Nil discards it.
	Progress io.Writer
	// Heartbeat is the interval of "still building" lines. Default 30s.
	Heartbeat time.Duration
}

// MissingError reports artifacts that are not in the cache directory.
type MissingError struct {
	Dir     string
	Missing []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("test control plane binaries missing in %s: %s; build them with foo/testenv/hack/build-binaries.sh (or `go run ./cmd/build` in foo/testenv)",
		e.Dir, strings.Join(e.Missing, ", "))
}

// Locate returns the paths of the built artifacts. If any is missing it
// returns a *MissingError naming them and the command that builds them.
func Locate(opts Options) (Set, error) {
	dir, err := resolveDir(&opts)
	if err != nil {
		return Set{}, err
	}
	var missing []string
	for _, a := range Artifacts() {
		if _, err := os.Stat(filepath.Join(dir, a.FileName())); err != nil {
			missing = append(missing, a.FileName())
		}
	}
	if len(missing) > 0 {
		return Set{}, &MissingError{Dir: dir, Missing: missing}
	}
	return setIn(dir), nil
}

func setIn(dir string) Set {
	p := func(name, version, ext string) string { return filepath.Join(dir, name+"-"+version+ext) }
	return Set{
		Etcd:                  p("etcd", EtcdVersion, ""),
		KubeAPIServer:         p("kube-apiserver", KubernetesVersion, ""),
		KubeControllerManager: p("kube-controller-manager", KubernetesVersion, ""),
		KubeScheduler:         p("kube-scheduler", KubernetesVersion, ""),
		Kwok:                  p("kwok", KwokVersion, ""),
		KwokStages:            p("kwok-stages", KwokVersion, ".yaml"),
	}
}

// Ensure builds every missing artifact, sequentially, and returns the paths.
// Artifacts already present are not touched and not reported. A build writes to a temporary
// file and renames it into place, so an interrupted build leaves nothing
// that Locate would accept.
func Ensure(ctx context.Context, opts Options) (Set, error) {
	dir, err := resolveDir(&opts)
	if err != nil {
		return Set{}, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Set{}, fmt.Errorf("creating binary cache: %w", err)
	}
	for _, a := range Artifacts() {
		target := filepath.Join(dir, a.FileName())
		if _, err := os.Stat(target); err == nil {
			continue
		}
		src, err := resolveSource(&opts)
		if err != nil {
			return Set{}, err
		}
		start := time.Now()
		if a.Run {
			fmt.Fprintf(progress, "writing  %s (go run %s in %s) ...\n", a.FileName(), a.Package, a.ModuleDir)
		} else {
			fmt.Fprintf(progress, "building %s from the Go module proxy (%s) ...\n", a.FileName(), a.Package)
		}
		if err := build(ctx, a, filepath.Join(src, a.ModuleDir), target, progress, opts.Heartbeat); err != nil {
			return Set{}, err
		}
		fmt.Fprintf(progress, "built    %s in %s\n", a.FileName(), time.Since(start).Round(time.Second))
	}
	return setIn(dir), nil
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
		args := []string{"build", "-o", tmp}
		if a.LDFlags != "" {
			args = append(args, "-ldflags", a.LDFlags)
		}
		cmd = exec.CommandContext(ctx, "go", append(args, a.Package)...)
	}
	cmd.Dir = moduleDir
	// The tools modules are standalone: no workspace, no vendoring, and
	// go.sum must already hold every checksum.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
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
				fmt.Fprintf(progress, "         still building %s (%s)\n", a.FileName(), time.Since(start).Round(time.Second))
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
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("building %s: %w", a.Name, err)
	}
	return nil
}

func resolveDir(opts *Options) (string, error) {
	if opts.Dir == "" {
		opts.Dir = os.Getenv(EnvDir)
	}
	if opts.Dir == "" {
		src, err := resolveSource(opts)
		if err != nil {
			return "", err
		}
		opts.Dir = filepath.Join(src, ".bin")
	}
	return filepath.Abs(opts.Dir)
}

func resolveSource(opts *Options) (string, error) {
	if opts.SourceDir == "" {
		opts.SourceDir = os.Getenv(EnvSourceDir)
	}
	if opts.SourceDir == "" {
		dir, err := SourceDir()
		if err != nil {
			return "", err
		}
		opts.SourceDir = dir
	}
	return filepath.Abs(opts.SourceDir)
}

// SourceDir finds the foo/testenv source directory: from this package's
// compiled-in source location if it still exists, else by walking up from the
// working directory to the go.mod of the foo/testenv module.
func SourceDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(filepath.Dir(file))
		if isTestenvDir(dir) {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locating foo/testenv: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isTestenvDir(dir) {
			return dir, nil
		}
		if isTestenvDir(filepath.Join(dir, "foo", "testenv")) {
			return filepath.Join(dir, "foo", "testenv"), nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return "", errors.New("locating foo/testenv: not found from the working directory; set " + EnvSourceDir)
}

// RepoRoot returns the root of the ctrlkit repository: the directory two
// levels above SourceDir, whose go.mod declares github.com/ctrlkit/ctrlkit.
func RepoRoot() (string, error) {
	src, err := SourceDir()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(filepath.Dir(src))
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(data), "module github.com/ctrlkit/ctrlkit\n") {
		return "", fmt.Errorf("locating the ctrlkit repository: %s is not its root", root)
	}
	return root, nil
}

func isTestenvDir(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == testenvModule
		}
	}
	return false
}
