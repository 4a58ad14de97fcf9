//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockHolder returns the pid of the process holding the index's LOCK
// file (Pebble takes a POSIX record lock on it, which F_GETLK reports),
// or 0 when it cannot tell (no holder, another kind of lock).
func lockHolder(dir string) int {
	f, err := os.Open(filepath.Join(dir, "LOCK"))
	if err != nil {
		return 0
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK {
		return 0
	}
	return int(lk.Pid)
}

// releaseFile ends f for its reader (a pipe's end of input) without
// freeing its descriptor: /dev/null takes its place, so that a file the
// process opens later (the index's, on a handover) never gets the
// descriptor of stdout, where a write to fd 1 would land in it.
func releaseFile(f *os.File) error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return f.Close()
	}
	defer null.Close()
	return unix.Dup2(int(null.Fd()), int(f.Fd()))
}
