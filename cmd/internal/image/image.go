// Package image builds reproducible OCI images of Go programs without a
// container daemon, a Dockerfile or a base image: a static Linux binary
// compiled from a main package, in an image FROM scratch.
//
// The image has one layer holding
//
//	/etc/group, /etc/passwd  root (0) and nonroot (65532), with no login shell
//	/home/nonroot/           nonroot's home, owned by 65532:65532, mode 0700
//	/tmp/                    mode 1777
//	/usr/local/bin/NAME      the binary, mode 0755
//
// and nothing else: no shell, no libc, no CA certificates. Every other
// entry is owned by root (0:0). The configuration runs the binary as its
// entrypoint, as User "65532:65532", on linux and the architecture
// compiled for. NAME is the last element of the image's repository: the
// binary of ctrlkit/foo-controller:dev is /usr/local/bin/foo-controller.
//
// The same inputs give the same image byte for byte: the binary is built
// with -trimpath and an empty build ID, every tar header has the same
// modification time (Options.Time, such as SOURCE_DATE_EPOCH, else the
// Unix epoch) and root or nonroot ownership, entries are sorted by name,
// and the configuration's created time is that time too. Go's VCS stamp
// is kept, so that the binary's build information (and the image's
// org.opencontainers.image.revision label) names the commit it was built
// from: the commit, and whether the working tree had changes, are inputs
// too. So are the Go toolchain and the module's dependencies.
//
// Build does everything for one image: Compile, New and Write, which
// leaves an OCI image layout directory and a docker-archive tarball (what
// docker load, podman load and kind load image-archive read) in the
// output directory.
package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Where the image puts things, and whom it runs as.
const (
	// BinDir is the directory of the binary in the image.
	BinDir = "/usr/local/bin"
	// UID and GID are the user and group ids of "nonroot", the image's user.
	UID, GID = 65532, 65532
	// User is the image configuration's user: nonroot by number, so that
	// a pod's runAsNonRoot can check it without reading /etc/passwd.
	User = "65532:65532"
	// DefaultArch is the architecture built when Options.Arch is empty.
	DefaultArch = "amd64"
)

// Spec is one image to build.
type Spec struct {
	// Dir is the directory of a main package, inside a Go module; the
	// binary is built there, by that module's go.mod (and go.work, if
	// any).
	Dir string
	// Ref names the image: a repository and a tag, such as
	// ctrlkit/foo-controller:dev. Without a tag it is "latest". Its
	// repository's last element names the binary and the output files.
	Ref string
}

// Options apply to every image built.
type Options struct {
	// Arch is the GOARCH to compile for and the image's architecture;
	// DefaultArch when empty.
	Arch string
	// Time is the modification time of every file and the created time of
	// the image, truncated to the second; the Unix epoch when zero. See
	// SourceDateEpoch.
	Time time.Time
	// Go is the go command; "go" (from PATH) when empty.
	Go string
	// Labels are added to the image configuration's labels, over those
	// taken from the binary's build information (see New).
	Labels map[string]string
	// BuildOutput receives what go build prints (compiler errors); when
	// nil, it becomes part of Compile's error instead.
	BuildOutput io.Writer
}

func (o Options) arch() string {
	if o.Arch == "" {
		return DefaultArch
	}
	return o.Arch
}

func (o Options) time() time.Time {
	if o.Time.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return o.Time.UTC().Truncate(time.Second)
}

// Result is what Build made.
type Result struct {
	// Ref is the image's name, parsed.
	Ref name.Tag
	// Digest is the digest of the image manifest, as in the OCI layout's
	// index.json and in a registry the layout is pushed to unchanged.
	Digest v1.Hash
	// Layout is the OCI image layout directory, OutDir/NAME.
	Layout string
	// Tarball is the docker-archive tarball, OutDir/NAME.tar.
	Tarball string
}

// Build compiles the main package of spec, builds its image (see New) and
// writes it to outDir (see Write). The binary is compiled into a temporary
// directory that Build removes.
func Build(ctx context.Context, spec Spec, outDir string, opts Options) (Result, error) {
	tag, err := ParseRef(spec.Ref)
	if err != nil {
		return Result{}, err
	}
	tmp, err := os.MkdirTemp("", "image-build-")
	if err != nil {
		return Result{}, fmt.Errorf("building %s: %w", spec.Ref, err)
	}
	defer os.RemoveAll(tmp)
	binary := filepath.Join(tmp, Name(tag))
	if err := Compile(ctx, spec.Dir, binary, opts); err != nil {
		return Result{}, fmt.Errorf("building %s: %w", spec.Ref, err)
	}
	img, err := New(binary, Name(tag), opts)
	if err != nil {
		return Result{}, fmt.Errorf("building %s: %w", spec.Ref, err)
	}
	res, err := Write(img, tag, outDir)
	if err != nil {
		return Result{}, fmt.Errorf("building %s: %w", spec.Ref, err)
	}
	return res, nil
}

// ParseRef parses an image name with an optional tag (default "latest"),
// such as ctrlkit/foo-controller:dev. Digests are refused: the digest of
// an image is what Build computes. So is a name whose last element is "."
// or "..", which could not name a file.
func ParseRef(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	// The last element names the binary and the output files.
	if n := Name(tag); n == "." || n == ".." {
		return name.Tag{}, fmt.Errorf("image name %q: the last element of the repository, %q, is not a file name", ref, n)
	}
	return tag, nil
}

// Name is the name of the binary and of the output files of the image
// tag: the last element of its repository (foo-controller for
// ctrlkit/foo-controller:dev).
func Name(tag name.Tag) string {
	return path.Base(tag.RepositoryStr())
}

// SourceDateEpoch parses the value of the SOURCE_DATE_EPOCH environment
// variable (https://reproducible-builds.org/specs/source-date-epoch/):
// seconds since the Unix epoch, not negative. An empty value gives the
// Unix epoch.
func SourceDateEpoch(value string) (time.Time, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", value, err)
	}
	if secs < 0 {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH " + value + " is before 1970")
	}
	return time.Unix(secs, 0).UTC(), nil
}
