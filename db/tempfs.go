package db

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tempCheckBytes is how many bytes of temporary files are written
// between two checks of the disk reserve (reserveFS).
var tempCheckBytes int64 = 16 << 20

// reserveFS is the filesystem of lshdb's temporary files (a load's
// sorted runs and tables, a pairs run's spilled candidates and sets): it
// refuses to write on with ErrDiskFull when the free space of the index's
// filesystem falls to the disk reserve (Options.DiskReserve), checked
// when a file is created and every tempCheckBytes written. NB: only
// writes checked the reserve, and one pairs request over HTTP at a low
// threshold filled a disk to its last byte with run files, where Pebble
// panics or retries without end.
type reserveFS struct {
	vfs.FS
	dir     string
	reserve int64
	// unchecked is the bytes written since the last check.
	unchecked atomic.Int64
	refusals  *atomic.Uint64 // counts the checks that refuse (Metrics.DiskFullRefusals)
}

// tempFS returns the filesystem for db's temporary files in dir
// (reserveFS, measuring dir's filesystem), a read-only handle's too: its
// pairs run fills a disk as well. NB: an index on read-only media (which
// reports no free space) has its runs' files in the system's temporary
// directory (runTempDir), and that is where they are measured.
func (db *DB) tempFS(dir string) vfs.FS {
	if db.opts.DiskReserve < 0 {
		return db.opts.FS
	}
	return &reserveFS{FS: db.opts.FS, dir: dir, reserve: db.opts.DiskReserve, refusals: &db.counts.diskFull}
}

func (r *reserveFS) check() error {
	r.unchecked.Store(0)
	// NB: the reserve itself is the margin of the next stretch of
	// writes: a temporary file may eat tempCheckBytes into it, no more.
	err := roomIn(r.FS, r.dir, r.reserve, 0)
	if err != nil && r.refusals != nil {
		r.refusals.Add(1)
	}
	return err
}

func (r *reserveFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	f, err := r.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &reserveFile{File: f, fs: r}, nil
}

// reserveFile is a file of a reserveFS.
type reserveFile struct {
	vfs.File
	fs *reserveFS
}

// wrote counts n bytes about to be written, and checks the reserve once
// tempCheckBytes have been since the last check.
func (r *reserveFS) wrote(n int) error {
	if r.unchecked.Add(int64(n)) < tempCheckBytes {
		return nil
	}
	return r.check()
}

func (f *reserveFile) Write(p []byte) (int, error) {
	if err := f.fs.wrote(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *reserveFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.wrote(len(p)); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}
