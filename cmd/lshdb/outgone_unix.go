//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeReaderGone reports whether f is a pipe or socket whose reader has
// gone: a write to it would fail (EPIPE). poll says so without writing
// (POLLERR or POLLHUP on the writing end).
func pipeReaderGone(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}
