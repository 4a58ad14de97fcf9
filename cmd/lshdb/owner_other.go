//go:build !unix

package main

import "io/fs"

// releaseFile ends f for its reader: here, by closing it.
func releaseFile(f interface{ Close() error }) error { return f.Close() }

// processUmask is the permissions an output file does not get
// (outputMode): no umask here.
var processUmask fs.FileMode = 0o022

// openFileLimit is the process's bound on open files: here, taken to be
// 8192.
func openFileLimit() int { return 8192 }

// openDescriptors returns how many files the process has open: not told
// here (0).
func openDescriptors() int { return 0 }

// strangersLink reports whether link is another user's link in a shared
// directory: not told here.
func strangersLink(string) bool { return false }
