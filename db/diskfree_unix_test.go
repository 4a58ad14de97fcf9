//go:build unix

package db

import "syscall"

// freeBytes is the space free to an unprivileged writer on dir's
// filesystem (statfs), or -1 when it cannot tell.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
