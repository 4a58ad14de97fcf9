//go:build !unix

package db

import "os"

// processRuns reports whether a process with that pid may run: here,
// always (a killed backup's copy is then left).
func processRuns(int) bool { return true }

// ownerLocks says that a backup's owner file is locked while it runs:
// not here, where the pid it names is taken as the proof (claimOwner).
const ownerLocks = false

// noFollow is the open flag that refuses a symbolic link: none here,
// where claimOwner does not open an owner file (ownerLocks).
const noFollow = 0

// lockOwner is not called where ownerLocks is false.
func lockOwner(*os.File) error { return nil }

// sameDevice reports whether the paths a and b are on one filesystem:
// here it cannot be told (false).
func sameDevice(a, b string) bool { return false }

// otherDevice reports whether the paths a and b are known to be on two
// filesystems: here it cannot be told (false).
func otherDevice(a, b string) bool { return false }

// chownLike gives dir's files fi's owner: not here.
func chownLike(string, os.FileInfo) error { return nil }
