//go:build !unix

package db

// lockHolderPID returns 0: the holder of an index's lock is not told here.
func lockHolderPID(dir string) int { return 0 }
