//go:build unix

package db

import (
	"errors"
	"syscall"
)

// processRuns reports whether a process with that pid runs (or may:
// one of another user's, which signal 0 may not reach).
func processRuns(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sameDevice reports whether the paths a and b are on one filesystem
// (false if either cannot be told).
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
