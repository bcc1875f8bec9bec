//go:build !unix

package main

import "io/fs"

// keepOwner does nothing where files have no owner apigen can set: a file
// put in place of another has the owner the system gives it.
func keepOwner(string, fs.FileInfo) error { return nil }
