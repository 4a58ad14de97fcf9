//go:build unix

package db

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockHolderPID returns the process that holds the lock of the index in
// dir (Pebble's LOCK file, an fcntl lock), or 0 when it cannot tell (no
// such file, no lock, or a lock of this process, which F_GETLK does not
// report).
func lockHolderPID(dir string) int {
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
