//go:build unix

package db

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// noFollow is the open flag that refuses a symbolic link (ELOOP).
const noFollow = syscall.O_NOFOLLOW

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

// chownLike gives dir and the files in it the owner and group of fi,
// where they differ and the process may (root restoring another user's
// index); elsewhere it does nothing.
func chownLike(dir string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(st.Uid), int(st.Gid))
	})
}
