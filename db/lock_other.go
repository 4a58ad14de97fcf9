//go:build !unix

package db

import "io"

// flockDir takes no lock where there is no flock(2): Pebble's lock
// (LockFileEx on Windows) is the file's own, which no other handle's
// close releases.
func flockDir(dir string, readOnly bool) (io.Closer, error) { return nil, nil }
