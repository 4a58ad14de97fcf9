//go:build !unix

package db

import "os"

// processRuns reports whether a process with that pid may run: here,
// always (a killed backup's copy is then left).
func processRuns(int) bool { return true }

// sameDevice reports whether the paths a and b are on one filesystem:
// here it cannot be told (false).
func sameDevice(a, b string) bool { return false }

// ownDir reports whether fi (of an Lstat) is a directory, not a symbolic
// link: elsewhere than Unix the temporary directory is the user's own.
func ownDir(fi os.FileInfo) bool { return fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 }
