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
