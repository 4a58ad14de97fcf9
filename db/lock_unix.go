//go:build unix

package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// flockDir takes a flock(2) on the directory dir itself, beside Pebble's
// lock: exclusive for a writable open, shared for a read-only one. It
// returns the open directory, which holds the flock until it is closed,
// or nil where the flock cannot be had for any reason but another
// holder (a filesystem that takes none: Pebble's lock alone then guards
// the index).
//
// NB: Pebble's lock is a POSIX record (fcntl) lock on DIR/LOCK, which the
// process loses when it closes any descriptor of that file, not only its
// own: an embedding service that read the index's files (a checksum, a
// tar of the directory for an upload) released it, a second process
// opened the index for writing, and with both writing the index no longer
// opened (ErrCorrupt: a table the manifest lists had another size; an
// embedder's review, E1). A flock belongs to the open file description:
// no other descriptor's close releases it, and it does not interact with
// fcntl locks on Linux. It is taken on the directory, not on LOCK, so
// that where flock is emulated with fcntl locks (NFS) it never meets
// Pebble's own lock.
func flockDir(dir string, readOnly bool) (io.Closer, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, nil // NB: Pebble's lock reports what is wrong
	}
	how := syscall.LOCK_EX
	if readOnly {
		// NB: shared, so that readers of an index on a read-only
		// filesystem (where Pebble's lock holds nothing) share it, as
		// before; a writer is still refused beside a reader.
		how = syscall.LOCK_SH
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, fmt.Errorf("the directory is locked (flock): %w", syscall.EWOULDBLOCK)
	}
	f.Close()
	return nil, nil
}
