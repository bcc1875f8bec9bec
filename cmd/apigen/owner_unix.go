//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the file tmp, which is to replace the file described by
// was, was's owner and group, so that an edit does not make the file
// whoever runs apigen's. Where the process may not (an unprivileged user
// editing another's file it may write), tmp keeps the process's: the
// edit goes on.
func keepOwner(tmp string, was fs.FileInfo) error {
	st, ok := was.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return nil
	}
	if err := os.Lchown(tmp, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}
