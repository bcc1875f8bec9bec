package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/cmd/internal/image"
)

// rootModule is the module path of the repository's root go.mod.
const rootModule = "github.com/ctrlkit/ctrlkit"

// repoRoot walks up from the working directory to the directory whose
// go.mod declares rootModule.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+rootModule+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod of %s above the working directory", rootModule)
		dir = parent
	}
}

// writeModule writes a module of one main package with the source main
// into a new directory and returns it.
func writeModule(t *testing.T, main string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/op\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	return dir
}

// layerFiles reads the only layer of img: every header, by name, and the
// content of the regular files.
func layerFiles(t *testing.T, img v1.Image) (names []string, headers map[string]*tar.Header, contents map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	headers, contents = map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, headers, contents
		}
		require.NoError(t, err)
		names = append(names, hdr.Name)
		headers[hdr.Name] = hdr
		if hdr.Typeflag == tar.TypeReg {
			contents[hdr.Name], err = io.ReadAll(tr)
			require.NoError(t, err)
		}
	}
}

// fileSum is the SHA-256 of a file's bytes.
func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(data)
}

// TestFooImage builds the image of examples/foo twice, checks that both
// builds are the same byte for byte, what the image holds, that its
// tarball reads back as the same image, and runs the binary of its layer.
func TestFooImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/foo")
	}
	if runtime.GOOS != "linux" {
		t.Skip("runs a linux binary")
	}
	root := repoRoot(t)
	ctx := t.Context()
	spec := image.Spec{Dir: filepath.Join(root, "examples", "foo"), Ref: "ctrlkit/foo-controller:dev"}
	opts := image.Options{Arch: runtime.GOARCH}
	first, err := image.Build(ctx, spec, t.TempDir(), opts)
	require.NoError(t, err)
	second, err := image.Build(ctx, spec, t.TempDir(), opts)
	require.NoError(t, err)
	t.Logf("%s %s", spec.Ref, first.Digest)

	t.Run("reproducible", func(t *testing.T) {
		assert.Equal(t, first.Digest, second.Digest)
		assert.Equal(t, fileSum(t, first.Tarball), fileSum(t, second.Tarball), "the tarballs are the same bytes")
		for _, file := range []string{"index.json", "oci-layout"} {
			assert.Equal(t, fileSum(t, filepath.Join(first.Layout, file)), fileSum(t, filepath.Join(second.Layout, file)), file)
		}
		assert.Equal(t, "foo-controller", filepath.Base(first.Layout))
		assert.Equal(t, "foo-controller.tar", filepath.Base(first.Tarball))
	})

	idx, err := layout.ImageIndexFromPath(first.Layout)
	require.NoError(t, err)
	index, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, index.Manifests, 1)
	assert.Equal(t, first.Digest, index.Manifests[0].Digest)
	assert.Equal(t, "dev", index.Manifests[0].Annotations[image.RefNameAnnotation])
	img, err := idx.Image(first.Digest)
	require.NoError(t, err)
	require.NoError(t, validate.Image(img), "digests, sizes and diff IDs agree")
	cfg, err := img.ConfigFile()
	require.NoError(t, err)

	t.Run("configuration", func(t *testing.T) {
		mt, err := img.MediaType()
		require.NoError(t, err)
		assert.Equal(t, types.OCIManifestSchema1, mt)
		assert.Equal(t, image.User, cfg.Config.User)
		for _, root := range []string{"", "0", "root", "0:0"} {
			assert.NotEqual(t, root, cfg.Config.User)
		}
		assert.Equal(t, []string{"/usr/local/bin/foo-controller"}, cfg.Config.Entrypoint)
		assert.Empty(t, cfg.Config.Cmd)
		assert.Equal(t, "linux", cfg.OS)
		assert.Equal(t, runtime.GOARCH, cfg.Architecture)
		assert.Equal(t, time.Unix(0, 0).UTC(), cfg.Created.UTC())
		assert.Equal(t, "https://github.com/ctrlkit/ctrlkit", cfg.Config.Labels[image.LabelSource])
		if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			assert.Equal(t, strings.TrimSpace(string(out)), cfg.Config.Labels[image.LabelRevision])
		}
	})

	names, headers, contents := layerFiles(t, img)
	binary := filepath.Join(t.TempDir(), "foo-controller")

	t.Run("layer", func(t *testing.T) {
		assert.Equal(t, []string{
			"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "tmp/",
			"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/foo-controller",
		}, names, "only these, sorted")
		for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
			assert.NotContains(t, headers, sh, "no shell")
		}
		for name, hdr := range headers {
			assert.Equal(t, time.Unix(0, 0).UTC(), hdr.ModTime.UTC(), name)
			if name != "home/nonroot/" {
				assert.Zero(t, hdr.Uid, name)
				assert.Zero(t, hdr.Gid, name)
			}
		}
		assert.Equal(t, image.UID, headers["home/nonroot/"].Uid)
		assert.Equal(t, int64(0o1777), headers["tmp/"].Mode)
		assert.Contains(t, string(contents["etc/passwd"]), "nonroot:x:65532:65532:")
		assert.Contains(t, string(contents["etc/group"]), "nonroot:x:65532:")

		entry := headers["usr/local/bin/foo-controller"]
		require.NotNil(t, entry, "the entrypoint is in the layer")
		assert.Equal(t, byte(tar.TypeReg), entry.Typeflag)
		assert.Equal(t, int64(0o755), entry.Mode, "executable")
	})

	t.Run("tarball", func(t *testing.T) {
		tag, err := name.NewTag(spec.Ref)
		require.NoError(t, err)
		loaded, err := tarball.ImageFromPath(first.Tarball, &tag)
		require.NoError(t, err)
		require.NoError(t, validate.Image(loaded))
		wantConfig, err := img.ConfigName()
		require.NoError(t, err)
		gotConfig, err := loaded.ConfigName()
		require.NoError(t, err)
		assert.Equal(t, wantConfig, gotConfig, "the same image ID")
		wantRaw, err := img.RawConfigFile()
		require.NoError(t, err)
		gotRaw, err := loaded.RawConfigFile()
		require.NoError(t, err)
		assert.Equal(t, wantRaw, gotRaw)
		wantLayers, err := img.Layers()
		require.NoError(t, err)
		gotLayers, err := loaded.Layers()
		require.NoError(t, err)
		require.Len(t, gotLayers, len(wantLayers))
		for i := range wantLayers {
			want, err := wantLayers[i].Digest()
			require.NoError(t, err)
			got, err := gotLayers[i].Digest()
			require.NoError(t, err)
			assert.Equal(t, want, got, "layer %d", i)
		}
		manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(first.Tarball) })
		require.NoError(t, err)
		require.Len(t, manifest, 1)
		assert.Equal(t, []string{spec.Ref}, manifest[0].RepoTags, "docker load tags it as the manifests name it")
	})

	// The binary of the layer, run on this machine.
	require.NoError(t, os.WriteFile(binary, contents["usr/local/bin/foo-controller"], 0o755))

	t.Run("--version", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, binary, "--version")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		assert.Contains(t, stdout.String(), "path: github.com/ctrlkit/ctrlkit/examples/foo\n")
		assert.Contains(t, stdout.String(), "module: "+rootModule+" ")
		if rev := cfg.Config.Labels[image.LabelRevision]; rev != "" {
			assert.Contains(t, stdout.String(), "revision: "+rev+"\n")
		}
		assert.Empty(t, stderr.String())
	})

	t.Run("no cluster", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: someone
  user: {token: "t"}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: someone}
current-context: nowhere
`), 0o600))
		tests := []struct {
			name string
			args []string
			want string
		}{
			{name: "unreachable API server", args: []string{"--kubeconfig=" + kubeconfig}, want: "cannot reach the API server at https://127.0.0.1:1"},
			{name: "no configuration", want: "no cluster configuration"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				var stderr bytes.Buffer
				cmd := exec.CommandContext(ctx, binary, append(tt.args, "--metrics-bind-address=0", "--health-probe-bind-address=0")...)
				// Nothing to find a cluster by: no $KUBECONFIG, no
				// in-cluster variables, a home without ~/.kube.
				cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/nonexistent"}
				cmd.Stderr = &stderr
				err := cmd.Run()
				require.NoError(t, ctx.Err(), "the binary gives up at once")
				var exitErr *exec.ExitError
				require.ErrorAs(t, err, &exitErr, stderr.String())
				assert.Equal(t, 1, exitErr.ExitCode())
				assert.Contains(t, stderr.String(), "foo: "+tt.want)
			})
		}
	})
}

// The images of the other examples run their binary too: --version names
// the example, and without a cluster to reach it exits 1 with the reason.
func TestOtherExampleImages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs a linux binary")
	}
	root := repoRoot(t)
	for _, tt := range []struct{ example, ref, binary string }{
		{"bucket", "ctrlkit/bucket:dev", "usr/local/bin/bucket"},
		{"external", "ctrlkit/external:dev", "usr/local/bin/external"},
	} {
		t.Run(tt.example, func(t *testing.T) {
			ctx := t.Context()
			built, err := image.Build(ctx, image.Spec{Dir: filepath.Join(root, "examples", tt.example), Ref: tt.ref},
				t.TempDir(), image.Options{Arch: runtime.GOARCH})
			require.NoError(t, err)
			idx, err := layout.ImageIndexFromPath(built.Layout)
			require.NoError(t, err)
			img, err := idx.Image(built.Digest)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, image.User, cfg.Config.User)
			_, _, contents := layerFiles(t, img)
			binary := filepath.Join(t.TempDir(), tt.example)
			require.NoError(t, os.WriteFile(binary, contents[tt.binary], 0o755))

			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, binary, "--version").Output()
			require.NoError(t, err)
			assert.Contains(t, string(out), "path: github.com/ctrlkit/ctrlkit/examples/"+tt.example+"\n")

			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, binary, "--metrics-bind-address=0", "--health-probe-bind-address=0")
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/nonexistent"}
			cmd.Stderr = &stderr
			err = cmd.Run()
			require.NoError(t, ctx.Err(), "the binary gives up at once")
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, stderr.String())
			assert.Equal(t, 1, exitErr.ExitCode())
			assert.Contains(t, stderr.String(), tt.example+": no cluster configuration")
		})
	}
}

// TestBuildOptions builds a small program with every option and builds it
// again into the same directory, which replaces the first image.
func TestBuildOptions(t *testing.T) {
	dir := writeModule(t, "package main\n\nfunc main() {}\n")
	out := t.TempDir()
	created := time.Unix(1700000000, 0).UTC()
	opts := image.Options{
		Time:   created,
		Labels: map[string]string{"team": "ops", image.LabelSource: "https://example.com/op"},
	}
	res, err := image.Build(t.Context(), image.Spec{Dir: dir, Ref: "example.com/op:v1"}, out, opts)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "op"), res.Layout)
	assert.Equal(t, "example.com/op:v1", res.Ref.String())

	opts.Arch = "arm64"
	again, err := image.Build(t.Context(), image.Spec{Dir: dir, Ref: "example.com/op:v1"}, out, opts)
	require.NoError(t, err)
	assert.NotEqual(t, res.Digest, again.Digest, "another architecture is another image")

	idx, err := layout.ImageIndexFromPath(again.Layout)
	require.NoError(t, err)
	index, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, index.Manifests, 1, "the second build replaced the first")
	img, err := idx.Image(again.Digest)
	require.NoError(t, err)
	require.NoError(t, validate.Image(img))
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "arm64", cfg.Architecture)
	assert.Equal(t, created, cfg.Created.UTC())
	assert.Equal(t, map[string]string{"team": "ops", image.LabelSource: "https://example.com/op"}, cfg.Config.Labels,
		"the given labels; no revision outside a repository")
	require.Len(t, cfg.History, 1)
	assert.Equal(t, created, cfg.History[0].Created.UTC())
	assert.Contains(t, cfg.History[0].CreatedBy, "GOARCH=arm64 go build -trimpath -ldflags=-buildid= example.com/op")
	_, headers, contents := layerFiles(t, img)
	for name, hdr := range headers {
		assert.Equal(t, created, hdr.ModTime.UTC(), name)
	}
	assert.NotEmpty(t, contents["usr/local/bin/op"])

	loaded, err := tarball.ImageFromPath(again.Tarball, nil)
	require.NoError(t, err)
	loadedCfg, err := loaded.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "arm64", loadedCfg.Architecture, "the tarball was replaced too")
}

func TestBuildErrors(t *testing.T) {
	program := writeModule(t, "package main\n\nfunc main() {}\n")
	binary := filepath.Join(t.TempDir(), "op")
	require.NoError(t, image.Compile(t.Context(), program, binary, image.Options{}))
	notGo := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755))

	t.Run("Build", func(t *testing.T) {
		tests := []struct {
			name string
			spec image.Spec
			opts image.Options
			want string
		}{
			{name: "bad name", spec: image.Spec{Dir: program, Ref: "NOT/valid"}, want: `image name "NOT/valid"`},
			{name: "a name whose last element is ..", spec: image.Spec{Dir: program, Ref: "example.com/..:dev"}, want: `image name "example.com/..:dev"`},
			{name: "no such directory", spec: image.Spec{Dir: filepath.Join(program, "missing"), Ref: "example.com/op"}, want: "go build in"},
			{name: "no go command", spec: image.Spec{Dir: program, Ref: "example.com/op"}, opts: image.Options{Go: filepath.Join(program, "no-go")}, want: "go build in"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := image.Build(t.Context(), tt.spec, t.TempDir(), tt.opts)
				assert.ErrorContains(t, err, tt.want)
			})
		}
	})

	t.Run("New", func(t *testing.T) {
		tests := []struct {
			name, binary, binName, want string
		}{
			{name: "a path as the name", binary: binary, binName: "a/b", want: "is not a file name"},
			{name: "no name", binary: binary, want: "is not a file name"},
			{name: "no binary", binary: filepath.Join(t.TempDir(), "missing"), binName: "op", want: "reading the binary"},
			{name: "not a Go binary", binary: notGo, binName: "op", want: "reading the build information"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := image.New(tt.binary, tt.binName, image.Options{})
				assert.ErrorContains(t, err, tt.want)
			})
		}
	})

	// A Write that fails midway leaves the previous layout as it was, and
	// nothing of its own.
	t.Run("a failed Write keeps the previous layout", func(t *testing.T) {
		img, err := image.New(binary, "op", image.Options{})
		require.NoError(t, err)
		out := t.TempDir()
		tag, err := image.ParseRef("example.com/op:dev")
		require.NoError(t, err)
		_, err = image.Write(img, tag, out)
		require.NoError(t, err)
		before := treeOf(t, out)

		unreadable, err := mutate.Append(empty.Image, mutate.Addendum{Layer: failingLayer{}})
		require.NoError(t, err)
		_, err = image.Write(unreadable, tag, out)
		require.Error(t, err)
		assert.Equal(t, before, treeOf(t, out), "the output directory after a failed Write")
	})

	t.Run("Write over a directory that is not a layout", func(t *testing.T) {
		img, err := image.New(binary, "op", image.Options{})
		require.NoError(t, err)
		out := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(out, "op"), 0o755))
		tag, err := image.ParseRef("example.com/op:dev")
		require.NoError(t, err)
		_, err = image.Write(img, tag, out)
		assert.ErrorContains(t, err, "is not an OCI image layout")
		_, err = image.Write(img, tag, filepath.Join(binary, "sub"))
		assert.ErrorContains(t, err, "creating the output directory")
	})
}

// treeOf returns every file under dir, by path relative to it, with the
// SHA-256 of its content.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		files[rel] = fmt.Sprintf("%x", sha256.Sum256(data))
		return err
	}))
	return files
}

// failingLayer is a layer whose content cannot be read, as when a disk
// fails or a source goes away while an image is written.
type failingLayer struct{}

var errUnreadable = errors.New("the layer cannot be read")

func (failingLayer) Digest() (v1.Hash, error) {
	return v1.NewHash("sha256:" + strings.Repeat("1", 64))
}

func (failingLayer) DiffID() (v1.Hash, error) {
	return v1.NewHash("sha256:" + strings.Repeat("2", 64))
}

func (failingLayer) Compressed() (io.ReadCloser, error)   { return nil, errUnreadable }
func (failingLayer) Uncompressed() (io.ReadCloser, error) { return nil, errUnreadable }
func (failingLayer) Size() (int64, error)                 { return 100, nil }
func (failingLayer) MediaType() (types.MediaType, error)  { return types.OCILayer, nil }
