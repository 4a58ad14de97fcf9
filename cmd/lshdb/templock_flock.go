//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockTemp takes a flock on an output's temporary file for as long as it
// is open (its descriptor's open file description holds it, and the
// process's end lets go of it), so that a run of another host sharing
// the directory, whose pid means nothing here, tells a live run's file
// from a killed one's (tempHeld). Best effort: where no flock can be had
// (a filesystem without locks), none is taken.
//
// NB: a sweep's tempHeld takes the lock for an instant to tell whether a
// process holds it: one that lands as the file is made makes this try
// fail, and the run would write unlocked (a read-through's RT6-1). It
// tries again for a while.
func lockTemp(f *os.File) {
	for try := 0; try < 50; try++ {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return // NB: taken, or no lock to be had here
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tempHeld reports whether a process holds the flock of the temporary
// file at path (lockTemp), and known false where it cannot tell: no lock
// can be taken there, or the file cannot be opened (another user's).
func tempHeld(path string) (held, known bool) {
	// NB: read-write: NFS emulates a flock with a POSIX write lock,
	// which a read-only descriptor cannot take (EBADF).
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		return false, true // NB: the close lets go of it
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, true
	default:
		return false, false
	}
}
