//go:build !unix

package main

// lockHolder cannot tell the lock's holder here.
func lockHolder(dir string) int { return 0 }

// releaseFile ends f for its reader: here, by closing it.
func releaseFile(f interface{ Close() error }) error { return f.Close() }
