//go:build unix

package db

import (
	"errors"
	"os"
	"syscall"
)

// processRuns reports whether a process with that pid runs (or may:
// one of another user's, which signal 0 may not reach).
func processRuns(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sameDevice reports whether the paths a and b are on one filesystem
// (false if either cannot be told).
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}

// ownDir reports whether fi (of an Lstat) is a directory, not a symbolic
// link, of this process's user, that no one else may write.
func ownDir(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}
