//go:build unix

// Package lockholder tells which process holds an index's lock.
package lockholder

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// PID returns the pid of the process holding the LOCK file of the index
// in dir (Pebble takes a POSIX record lock on it, which F_GETLK reports),
// or 0 when it cannot tell: no such file, no holder, another kind of
// lock, or a lock of this process (which F_GETLK does not report).
//
// It never opens the lock file of a directory this process holds (Hold):
// closing it would release the process's lock. NB: it asks under held's
// mutex, so that a Hold of dir in this process, and the lock taken after
// it, wait until the file is closed again.
func PID(dir string) int {
	fi, err := os.Stat(dir) // NB: outside the mutex: a slow filesystem holds up no Hold of another index
	held.Lock()
	defer held.Unlock()
	if err == nil && heldLocked(fi) {
		return 0
	}
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
