//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processGone reports whether no process has this id (a signal 0 finds
// none). A process of another user counts as present.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
