package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefNameAnnotation is the annotation of the OCI image layout's index that
// holds the tag of the image (the OCI image specification's
// org.opencontainers.image.ref.name).
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Write writes img, named tag, into outDir (created if needed) as
//
//   - outDir/NAME/, an OCI image layout whose index.json lists img alone,
//     annotated with its tag (RefNameAnnotation), for tools that read
//     layouts (crane, skopeo, podman, containerd) and to push unchanged;
//   - outDir/NAME.tar, a docker-archive tarball with tag in its
//     manifest.json, which docker load, podman load and kind load
//     image-archive accept;
//
// where NAME is Name(tag). Both replace what a previous Write left there;
// Write refuses to replace a directory that is not an OCI image layout.
// Each is written under a temporary name beside its place and renamed into
// it once complete, so that a Write that fails midway leaves the previous
// layout and tarball as they were (a Write killed midway leaves them too,
// whole, under their own or a hidden name).
// The Result's Digest is img's manifest digest. A docker-archive tarball
// has no manifest, so an image read back from it (tarball.ImageFromPath)
// has the same configuration and layers but Docker media types, and so a
// manifest digest of its own.
func Write(img v1.Image, tag name.Tag, outDir string) (Result, error) {
	digest, err := img.Digest()
	if err != nil {
		return Result{}, fmt.Errorf("computing the image digest: %w", err)
	}
	res := Result{
		Ref:     tag,
		Digest:  digest,
		Layout:  filepath.Join(outDir, Name(tag)),
		Tarball: filepath.Join(outDir, Name(tag)+".tar"),
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("creating the output directory: %w", err)
	}
	if err := checkLayout(res.Layout); err != nil {
		return Result{}, err
	}
	// The new layout is written beside the old one and takes its place only
	// once complete: a failure or a kill before that leaves the old one.
	fresh, err := os.MkdirTemp(outDir, "."+Name(tag)+".new-")
	if err != nil {
		return Result{}, fmt.Errorf("writing the OCI layout %s: %w", res.Layout, err)
	}
	defer os.RemoveAll(fresh) // empty once renamed
	p, err := layout.Write(fresh, empty.Index)
	if err != nil {
		return Result{}, fmt.Errorf("writing the OCI layout %s: %w", res.Layout, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag.TagStr()})); err != nil {
		return Result{}, fmt.Errorf("writing the OCI layout %s: %w", res.Layout, err)
	}
	if err := os.Chmod(fresh, 0o755); err != nil {
		return Result{}, fmt.Errorf("writing the OCI layout %s: %w", res.Layout, err)
	}
	if err := replaceDir(fresh, res.Layout); err != nil {
		return Result{}, fmt.Errorf("writing the OCI layout %s: %w", res.Layout, err)
	}
	tmp := res.Tarball + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return Result{}, fmt.Errorf("writing the tarball %s: %w", res.Tarball, err)
	}
	if err := os.Rename(tmp, res.Tarball); err != nil {
		_ = os.Remove(tmp)
		return Result{}, fmt.Errorf("writing the tarball %s: %w", res.Tarball, err)
	}
	return res, nil
}

// checkLayout fails if dir exists but is not an OCI image layout: Write
// replaces only what it wrote.
func checkLayout(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is not an OCI image layout (no oci-layout file); not replacing it: %w", dir, err)
	}
	return nil
}

// replaceDir puts the directory fresh in the place of dir, which may not
// exist. The old directory is renamed aside first and removed last, so that
// at every moment one of the two is whole: a kill between the two renames
// leaves the old one beside dir, under fresh's name with ".old" added.
func replaceDir(fresh, dir string) error {
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = fresh + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(fresh, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
