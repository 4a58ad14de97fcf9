//go:build unix

package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// inheritedFDs are the descriptors above 2 that were open when the
// process started: those its caller gave it (3>>night.log), which an
// output may name as /dev/fd/N. Any other is one lshdb opened itself (a
// table, a log), which --out /dev/fd/N would have written over (a
// maintainer's review).
var inheritedFDs = openFDs()

// openFDs lists the process's open descriptors above 2.
func openFDs() map[int]bool {
	d, err := os.Open("/dev/fd")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	fds := map[int]bool{}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 && uintptr(fd) != d.Fd() {
			fds[fd] = true
		}
	}
	return fds
}

// givenStream refuses a descriptor above 2 that the process was not
// given.
func givenStream(fd int) error {
	if fd > 2 && !inheritedFDs[fd] {
		return fmt.Errorf("descriptor %d was not given to lshdb (a redirection such as %d>FILE gives one)", fd, fd)
	}
	return nil
}

// openStream returns a new descriptor of the process's own open file fd
// (dup: the same open file, its offset and O_APPEND shared), as a file.
// A descriptor above 2 must have been given to the process.
func openStream(fd int, name string) (*os.File, error) {
	if err := givenStream(fd); err != nil {
		return nil, err
	}
	n, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(n)
	return os.NewFile(uintptr(n), name), nil
}
