//go:build unix

package fspath

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// PrivateDir reports whether fi (of an Lstat) is a directory, not a
// symbolic link, of this process's user, that no one else may write: one
// under a shared temporary directory that lshdb may fill or sweep.
func PrivateDir(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}

// Guarded returns nil when no user but this process's and root can
// change where dir (absolute, its links resolved: Resolve) leads: every
// directory from the file system's root to dir is one of theirs, and none
// may be written by anyone else, but for one whose sticky bit keeps
// others from renaming what they do not own (a shared /tmp) above dir.
// Else it names the first directory that fails and why. NB: a directory
// another user may write is one in which they can swap the next part of
// the path for a link between a check of where dir is and its use.
func Guarded(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s is not an absolute path", dir)
	}
	paths := []string{string(filepath.Separator)}
	for part := range strings.SplitSeq(filepath.Clean(dir), string(filepath.Separator)) {
		if part != "" {
			paths = append(paths, filepath.Join(paths[len(paths)-1], part))
		}
	}
	for i, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s: its owner is not known", p)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", p)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case int(st.Uid) != os.Geteuid() && st.Uid != 0:
			return fmt.Errorf("%s belongs to user %d, neither this process's (%d) nor root", p, st.Uid, os.Geteuid())
		case fi.Mode().Perm()&0o022 != 0 && (fi.Mode()&fs.ModeSticky == 0 || i == len(paths)-1):
			return fmt.Errorf("%s may be written by other users (mode %v)", p, fi.Mode().Perm())
		}
	}
	return nil
}
