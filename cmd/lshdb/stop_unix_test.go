//go:build unix

package main

import (
	"os"
	"syscall"
	"testing"
)

// stopProcess stops p (SIGSTOP) until continueProcess: it answers
// nothing, and holds what it holds.
func stopProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// continueProcess continues p after stopProcess.
func continueProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// withFileLimit runs f with the soft limit of open files at n, where the
// hard limit allows it, and puts the limit back; it returns the soft
// limit before, and whether f ran.
func withFileLimit(t *testing.T, n uint64, f func()) (cur uint64, ran bool) {
	t.Helper()
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Max < n {
		return 0, false
	}
	low := r
	low.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	f()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Fatal(err)
	}
	return r.Cur, true
}
