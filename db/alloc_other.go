//go:build !unix

package db

import "os"

// allocatedBytes is the disk space a file takes: its size, where the
// allocated blocks are not known.
func allocatedBytes(fi os.FileInfo) uint64 { return uint64(fi.Size()) }
