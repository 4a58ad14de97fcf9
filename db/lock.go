package db

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/internal/lockholder"
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
func lockDirectory(dir string, o *Options) (*dirLock, error) {
	fs := o.fs
	if o.ReadOnly {
		fs = readOnlyLockFS{fs}
	}
	deadline := time.Now().Add(o.LockTimeout)
	wait := 10 * time.Millisecond
	for {
		held, err := holdDir(o.fs, dir)
		if err == nil {
			var lock *pebble.Lock
			if lock, err = pebble.LockDirectory(dir, fs); err == nil {
				var flock io.Closer
				if o.fs == vfs.Default {
					flock, err = flockLock(dir, o.ReadOnly)
				}
				if err == nil {
					return &dirLock{Lock: lock, flock: flock, held: held}, nil
				}
				lock.Close()
			}
			held.Release()
		}
		if o.LockTimeout <= 0 || !isLockError(err) {
			return nil, err
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

// dirLock is an Open's hold on its directory: Pebble's lock, the flock
// on its lock file (flockLock; nil where there is none), and the
// directory's place among those this process has open.
type dirLock struct {
	*pebble.Lock
	flock io.Closer
	held  *lockholder.Held
}

// Close releases the locks, then the directory's place.
func (l *dirLock) Close() error {
	err := l.Lock.Close()
	if l.flock != nil {
		l.flock.Close()
	}
	l.held.Release()
	return err
}

// holdDir records dir as open in this process (lockholder.Hold: by
// identity, so that no second handle opens it under another name, and no
// ask of who holds its lock releases it), or returns
// lockholder.ErrHeldHere if it is already (Pebble's own words for a lock
// this process holds, which isLockError and Open's message know). On
// another filesystem (in memory, a test's) it records nothing (nil).
func holdDir(fs vfs.FS, dir string) (*lockholder.Held, error) {
	if fs != vfs.Default {
		return nil, nil
	}
	return lockholder.Hold(dir)
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
//
// So is one that the lock file cannot be made in for want of permission
// where the index's directory is writable by no one (chmod -R a-w, as an
// archive is kept): no process but root's can write the index then, and
// no read command could open it, not even its owner's (an operator's
// review).
type readOnlyLockFS struct{ vfs.FS }

func (f readOnlyLockFS) Lock(name string) (io.Closer, error) {
	c, err := f.FS.Lock(name)
	if err != nil && errors.Is(err, syscall.EROFS) {
		return noLock{}, nil
	}
	if err != nil && errors.Is(err, fs.ErrPermission) {
		if fi, serr := f.FS.Stat(f.FS.PathDir(name)); serr == nil && fi.Mode().Perm()&0o222 == 0 {
			return noLock{}, nil
		}
	}
	return c, err
}

// noLock is the lock of a read-only filesystem.
type noLock struct{}

func (noLock) Close() error { return nil }
