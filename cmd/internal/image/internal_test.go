package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayerTar(t *testing.T) {
	mtime := time.Unix(1700000000, 0).UTC()
	data, err := layerTar("op", []byte("binary"), mtime)
	require.NoError(t, err)
	again, err := layerTar("op", []byte("binary"), mtime)
	require.NoError(t, err)
	assert.Equal(t, data, again, "the same input gives the same bytes")

	type want struct {
		typeflag byte
		mode     int64
		uid, gid int
		content  string
	}
	wants := map[string]want{
		"etc/":             {tar.TypeDir, 0o755, 0, 0, ""},
		"etc/group":        {tar.TypeReg, 0o644, 0, 0, group},
		"etc/passwd":       {tar.TypeReg, 0o644, 0, 0, passwd},
		"home/":            {tar.TypeDir, 0o755, 0, 0, ""},
		"home/nonroot/":    {tar.TypeDir, 0o700, UID, GID, ""},
		"tmp/":             {tar.TypeDir, 0o1777, 0, 0, ""},
		"usr/":             {tar.TypeDir, 0o755, 0, 0, ""},
		"usr/local/":       {tar.TypeDir, 0o755, 0, 0, ""},
		"usr/local/bin/":   {tar.TypeDir, 0o755, 0, 0, ""},
		"usr/local/bin/op": {tar.TypeReg, 0o755, 0, 0, "binary"},
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		names = append(names, hdr.Name)
		w, ok := wants[hdr.Name]
		if !assert.True(t, ok, "unexpected entry %s", hdr.Name) {
			continue
		}
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, w.typeflag, hdr.Typeflag, hdr.Name)
		assert.Equal(t, w.mode, hdr.Mode, hdr.Name)
		assert.Equal(t, w.uid, hdr.Uid, hdr.Name)
		assert.Equal(t, w.gid, hdr.Gid, hdr.Name)
		assert.Empty(t, hdr.Uname+hdr.Gname, hdr.Name)
		assert.Equal(t, w.content, string(content), hdr.Name)
		assert.Equal(t, mtime, hdr.ModTime.UTC(), hdr.Name)
		assert.True(t, hdr.AccessTime.IsZero() && hdr.ChangeTime.IsZero(), hdr.Name)
		assert.Empty(t, hdr.PAXRecords, hdr.Name)
	}
	assert.IsIncreasing(t, names, "sorted by name")
	assert.Len(t, names, len(wants))
	assert.Contains(t, passwd, "nonroot:x:65532:65532:")
	assert.Contains(t, group, "nonroot:x:65532:")
}

func TestSourceDateEpoch(t *testing.T) {
	tests := []struct {
		value   string
		want    time.Time
		wantErr string
	}{
		{value: "", want: time.Unix(0, 0).UTC()},
		{value: "0", want: time.Unix(0, 0).UTC()},
		{value: " 1700000000\n", want: time.Unix(1700000000, 0).UTC()},
		{value: "-1", wantErr: "before 1970"},
		{value: "yesterday", wantErr: `SOURCE_DATE_EPOCH "yesterday"`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := SourceDateEpoch(tt.value)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	assert.Equal(t, DefaultArch, o.arch())
	assert.Equal(t, time.Unix(0, 0).UTC(), o.time())
	o = Options{Arch: "arm64", Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))}
	assert.Equal(t, "arm64", o.arch())
	assert.Equal(t, time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC), o.time(), "UTC, whole seconds")
}

func TestNames(t *testing.T) {
	tests := []struct {
		ref, name, tag string
		wantErr        bool
	}{
		{ref: "ctrlkit/foo-controller:dev", name: "foo-controller", tag: "dev"},
		{ref: "ctrlkit/bucket", name: "bucket", tag: "latest"},
		{ref: "registry.example.com:5000/team/ops/thing:v1.2", name: "thing", tag: "v1.2"},
		{ref: "Upper/Case:dev", wantErr: true},
		// The last element names the binary and the output files: one that
		// is no file name is refused before anything is written.
		{ref: "example.com/..:dev", wantErr: true},
		{ref: "..:dev", wantErr: true},
		{ref: "example.com/a/../..:x", wantErr: true},
		{ref: "example.com/.:x", wantErr: true},
		{ref: "ctrlkit/foo@sha256:" + string(bytes.Repeat([]byte("a"), 64)), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			tag, err := ParseRef(tt.ref)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.name, Name(tag))
			assert.Equal(t, tt.tag, tag.TagStr())
		})
	}
}

func TestBuildLabels(t *testing.T) {
	tests := []struct {
		name string
		info debug.BuildInfo
		want map[string]string
	}{
		{
			name: "stamped module on GitHub",
			info: debug.BuildInfo{
				Main:     debug.Module{Path: "github.com/ctrlkit/ctrlkit", Version: "v0.0.0-20260101000000-0123456789ab+dirty"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}},
			},
			want: map[string]string{
				LabelSource:   "https://github.com/ctrlkit/ctrlkit",
				LabelRevision: "0123456789abcdef",
				LabelVersion:  "v0.0.0-20260101000000-0123456789ab+dirty",
			},
		},
		{
			name: "nested module on Codeberg",
			info: debug.BuildInfo{Main: debug.Module{Path: "codeberg.org/team/repo/tools", Version: "(devel)"}},
			want: map[string]string{LabelSource: "https://codeberg.org/team/repo"},
		},
		{
			name: "other hosts and short paths have no source",
			info: debug.BuildInfo{Main: debug.Module{Path: "example.com/op"}},
			want: map[string]string{},
		},
		{
			name: "a forge without a repository",
			info: debug.BuildInfo{Main: debug.Module{Path: "github.com/someone"}},
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, buildLabels(&tt.info))
		})
	}
}

func TestCheckLayout(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, checkLayout(filepath.Join(dir, "missing")), "nothing to replace")

	other := filepath.Join(dir, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "keep"), nil, 0o644))
	assert.ErrorContains(t, checkLayout(other), "is not an OCI image layout")
	assert.FileExists(t, filepath.Join(other, "keep"), "left alone")

	layoutDir := filepath.Join(dir, "layout")
	require.NoError(t, os.MkdirAll(filepath.Join(layoutDir, "blobs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(layoutDir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644))
	require.NoError(t, checkLayout(layoutDir))
}

func TestReplaceDir(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "layout")
	for i, content := range []string{"first", "second"} {
		fresh := filepath.Join(dir, ".layout.new")
		require.NoError(t, os.Mkdir(fresh, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(fresh, "index.json"), []byte(content), 0o644))
		require.NoError(t, replaceDir(fresh, target), "replacement %d", i)
		data, err := os.ReadFile(filepath.Join(target, "index.json"))
		require.NoError(t, err)
		assert.Equal(t, content, string(data))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "only the layout is left")
	}
}
