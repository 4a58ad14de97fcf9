//go:build !unix

package main

import (
	"errors"
	"os"
)

// openStream is the unix one's stand-in: /dev/fd names nothing here.
func openStream(fd int, name string) (*os.File, error) {
	return nil, errors.New("no /dev/fd on this system")
}

// givenStream is the unix one's stand-in.
func givenStream(fd int) error { return errors.New("no /dev/fd on this system") }
