//go:build !unix

package fspath

import "io/fs"

// PrivateDir reports whether fi (of an Lstat) is a directory, not a
// symbolic link: elsewhere than Unix the temporary directory is the
// user's own.
func PrivateDir(fi fs.FileInfo) bool { return fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 }
