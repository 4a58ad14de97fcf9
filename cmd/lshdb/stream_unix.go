//go:build unix

package main

import (
	"os"
	"syscall"
)

// openStream returns a new descriptor of the process's own open file fd
// (dup: the same open file, its offset and O_APPEND shared), as a file.
func openStream(fd int, name string) (*os.File, error) {
	n, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(n)
	return os.NewFile(uintptr(n), name), nil
}
