//go:build unix

package fspath

import (
	"io/fs"
	"os"
	"syscall"
)

// PrivateDir reports whether fi (of an Lstat) is a directory, not a
// symbolic link, of this process's user, that no one else may write: one
// under a shared temporary directory that lshdb may fill or sweep.
func PrivateDir(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}
