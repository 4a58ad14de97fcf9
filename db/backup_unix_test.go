//go:build unix

package db

import (
	"os"
	"sync"
	"syscall"
	"testing"
)

// holdOwner holds the lock on a backup's owner file at path that a live
// backup holds (claimOwner), until the returned function or the test's
// end.
func holdOwner(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(unlock)
	return unlock
}
