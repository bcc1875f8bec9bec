package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// The account files of the image: root and nonroot, neither with a shell
// to log in to (there is none).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// entry is one file or directory of the layer.
type entry struct {
	name     string // relative, without a leading slash; directories end in "/"
	mode     int64  // permission bits, with the sticky bit as 01000
	uid, gid int
	data     []byte // nil for a directory
}

// files returns the layer's entries, sorted by name, with the binary at
// BinDir/name.
func files(name string, binary []byte) []entry {
	dir := func(name string, mode int64, uid, gid int) entry {
		return entry{name: name, mode: mode, uid: uid, gid: gid}
	}
	file := func(name string, mode int64, data []byte) entry {
		return entry{name: name, mode: mode, data: data}
	}
	es := []entry{
		dir("etc/", 0o755, 0, 0),
		file("etc/group", 0o644, []byte(group)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("home/", 0o755, 0, 0),
		dir("home/nonroot/", 0o700, UID, GID),
		dir("tmp/", 0o1777, 0, 0),
		file(strings.TrimPrefix(path.Join(BinDir, name), "/"), 0o755, binary),
	}
	// Every parent of the binary, so that the directory tree is whole.
	for d := path.Dir(strings.TrimPrefix(path.Join(BinDir, name), "/")); d != "."; d = path.Dir(d) {
		es = append(es, dir(d+"/", 0o755, 0, 0))
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return es
}

// layerTar returns the uncompressed tar of the layer: the entries of files,
// in order, each with the modification time mtime and no other times,
// owned by the numeric ids alone (no user or group names).
func layerTar(name string, binary []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range files(name, binary) {
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.data == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s to the layer: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("writing %s to the layer: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	return buf.Bytes(), nil
}
