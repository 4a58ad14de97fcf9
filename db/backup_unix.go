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

// ownerLocks says that a backup's owner file is locked while it runs
// (lockOwner).
const ownerLocks = true

// lockOwner takes the lock on a backup's owner file f that a live backup
// holds, without waiting: errOwnerBusy when another open file holds it
// (this process's too). It lasts until f is closed, or its process ends.
func lockOwner(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errOwnerBusy
		}
		return err
	}
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

// otherDevice reports whether the paths a and b are known to be on two
// filesystems (false when either cannot be stat'ed).
func otherDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev != sb.Dev
}
