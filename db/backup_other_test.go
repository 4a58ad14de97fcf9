//go:build !unix

package db

import "testing"

// holdOwner would hold a backup's owner file's lock, which only Unix
// systems take (ownerLocks): the test is skipped.
func holdOwner(t *testing.T, path string) (unlock func()) {
	t.Helper()
	t.Skip("a backup's owner file is locked on Unix systems only")
	return nil
}
