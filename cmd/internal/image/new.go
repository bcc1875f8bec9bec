package image

import (
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"runtime/debug"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Labels of the OCI image specification that New sets.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
)

// New returns the image of the Linux binary in the file binary (see the
// package documentation), with OCI media types and the binary at
// BinDir/name. opts.Arch and opts.Time apply; opts.Go and opts.BuildOutput
// do not. The configuration's labels are, from the binary's build
// information: LabelRevision (the VCS commit), LabelVersion (the main
// module's version, unless "(devel)") and LabelSource (https:// and the
// repository, for a main module on github.com, codeberg.org or
// bitbucket.org), each only when known; then opts.Labels, which win.
// The layer is compressed once, in memory.
func New(binary, name string, opts Options) (v1.Image, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, fmt.Errorf("the binary's name %q is not a file name", name)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", binary, err)
	}
	created := opts.time()
	tarData, err := layerTar(name, data, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarData)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "CGO_ENABLED=0 GOOS=linux GOARCH=" + opts.arch() + " go build -trimpath -ldflags=-buildid= " + info.Path,
			Comment:   "the binary " + path.Join(BinDir, name) + ", /etc/passwd and /etc/group with nonroot (65532), /tmp",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the image configuration: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = opts.arch()
	cf.OS = "linux"
	cf.Created = v1.Time{Time: created}
	labels := buildLabels(info)
	maps.Copy(labels, opts.Labels)
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{path.Join(BinDir, name)},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the image configuration: %w", err)
	}
	return img, nil
}

// buildLabels returns the labels that info tells (see New).
func buildLabels(info *debug.BuildInfo) map[string]string {
	labels := map[string]string{}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			labels[LabelRevision] = s.Value
		}
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		labels[LabelVersion] = v
	}
	if src := sourceURL(info.Main.Path); src != "" {
		labels[LabelSource] = src
	}
	return labels
}

// sourceURL returns the web address of the repository of module path on
// the well-known forges, whose repositories are the first three elements
// of the path; "" for any other path.
func sourceURL(module string) string {
	parts := strings.Split(module, "/")
	switch parts[0] {
	case "github.com", "codeberg.org", "bitbucket.org":
		if len(parts) >= 3 && parts[1] != "" && parts[2] != "" {
			return "https://" + strings.Join(parts[:3], "/")
		}
	}
	return ""
}
