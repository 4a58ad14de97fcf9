//go:build !linux

package db

import "io"

// flockLock takes no lock but on Linux: Pebble's lock is the only one.
// NB: on Windows it is LockFileEx, which no other handle's close
// releases; on macOS and the BSDs flock(2) and fcntl locks on one file
// meet, so that a flock beside Pebble's would refuse this process its
// own lock.
func flockLock(dir string, readOnly bool) (io.Closer, error) { return nil, nil }

// flockPID returns 0: there is no flock.
func flockPID(error) int { return 0 }
