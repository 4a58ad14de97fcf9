//go:build !unix

package main

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }

// processGone cannot tell on this platform: nothing counts as gone, and
// bench prints the path of its temporary index instead.
func processGone(pid int) bool { return false }
