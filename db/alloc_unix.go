//go:build unix

package db

import (
	"os"
	"syscall"
)

// allocatedBytes is the disk space a file takes: its allocated blocks
// (what du counts), or its size where the file system does not say.
//
// NB: the size alone missed the space Pebble allocates ahead for each
// write-ahead log (about 1.1 memtables: 9 MiB for a log of 0.6 MB), and
// keeps for the logs it recycles: an index that info said took 8.4 MiB
// took 39 MiB, and a 100 MiB volume was full.
func allocatedBytes(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks > 0 {
		return uint64(st.Blocks) * 512
	}
	return uint64(fi.Size())
}
