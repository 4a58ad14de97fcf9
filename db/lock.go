package db

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	deadline := time.Now().Add(o.LockTimeout)
	wait := 10 * time.Millisecond
	for {
		lock, err := pebble.LockDirectory(dir, o.fs)
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
