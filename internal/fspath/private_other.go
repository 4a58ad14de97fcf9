//go:build !unix

package fspath

import (
	"fmt"
	"io/fs"
	"os"
)

// PrivateDir reports whether fi (of an Lstat) is a directory, not a
// symbolic link: elsewhere than Unix the temporary directory is the
// user's own.
func PrivateDir(fi fs.FileInfo) bool { return fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 }

// Guarded returns nil when dir (absolute, its links resolved) is a
// directory: elsewhere than Unix, who may change the directories above it
// is not checked.
func Guarded(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case !PrivateDir(fi):
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
