package db

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// lockRetried, when set (by tests), is called after each failed attempt
// to take a lock that Options.LockTimeout waits for.
var lockRetried func()

// lockDirectory takes the directory's lock, waiting up to o.LockTimeout
// for another process (or DB value) to release it.
//
// NB: Pebble's lock is a non-blocking fcntl lock: waiting is polling, with
// a backoff from 10 ms to 250 ms, so a waiter takes the lock at most that
// late after its release.
func lockDirectory(dir string, o *Options) (*pebble.Lock, error) {
	fs := o.fs
	if o.ReadOnly {
		fs = readOnlyLockFS{fs}
	}
	deadline := time.Now().Add(o.LockTimeout)
	wait := 10 * time.Millisecond
	for {
		lock, err := pebble.LockDirectory(dir, fs)
		if err == nil || o.LockTimeout <= 0 || !isLockError(err) {
			return lock, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		if lockRetried != nil {
			lockRetried()
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// readOnlyLockFS is the filesystem a read-only Open takes its lock on:
// where the lock file cannot be made because the filesystem is read-only
// (EROFS: a backup on read-only media, a snapshot mounted read-only),
// the lock is one that holds nothing. No process writes through a
// read-only filesystem, so there is no writer to exclude (but for one
// writing the same directory through another, writable mount, which
// Options.ReadOnly's doc warns of); without it no read command could
// open such an index, since Pebble makes its lock file for read-only
// opens too.
type readOnlyLockFS struct{ vfs.FS }

func (f readOnlyLockFS) Lock(name string) (io.Closer, error) {
	c, err := f.FS.Lock(name)
	if err != nil && errors.Is(err, syscall.EROFS) {
		return noLock{}, nil
	}
	return c, err
}

// noLock is the lock of a read-only filesystem.
type noLock struct{}

func (noLock) Close() error { return nil }
