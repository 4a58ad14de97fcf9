//go:build !unix

package main

import "io/fs"

// lockHolder cannot tell the lock's holder here.
func lockHolder(dir string) int { return 0 }

// releaseFile ends f for its reader: here, by closing it.
func releaseFile(f interface{ Close() error }) error { return f.Close() }

// processUmask is the permissions an output file does not get
// (outputMode): no umask here.
var processUmask fs.FileMode = 0o022
