//go:build !unix

package main

import (
	"errors"
	"os"
	"testing"
)

// errNoStop says that a process cannot be stopped and continued here:
// there is no SIGSTOP elsewhere than Unix.
var errNoStop = errors.New("stopping a process needs SIGSTOP (Unix)")

// stopProcess would stop p until continueProcess; elsewhere than Unix it
// fails.
func stopProcess(*os.Process) error { return errNoStop }

// continueProcess would continue p after stopProcess.
func continueProcess(*os.Process) error { return errNoStop }

// withFileLimit would run f with the soft limit of open files at n:
// elsewhere than Unix there is no such limit to set, and f does not run.
func withFileLimit(*testing.T, uint64, func()) (uint64, bool) { return 0, false }
