package db

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// flockLock takes a flock(2) on the index's lock file, DIR/LOCK, beside
// Pebble's fcntl lock on it, which must be held already: exclusive for
// a writable open, shared for a read-only one. It returns the open file,
// which holds the flock until it is closed, or a *flockedError when
// another process holds one. Where no flock can be had for any other
// reason (a network filesystem, which emulates flock with fcntl locks),
// Pebble's lock alone guards the index.
//
// NB: Pebble's lock is a POSIX record (fcntl) lock, which the process
// loses when it closes any descriptor of the file, not only its own: an
// embedding service that read the index's files (a checksum, a tar of
// the directory for an upload) released it, a second process opened the
// index for writing, and with both writing the index no longer opened
// (ErrCorrupt: a table the manifest lists had another size; an
// embedder's review, E1). A flock belongs to the open file description:
// no other descriptor's close releases it, and on Linux it does not meet
// fcntl locks, but on NFS and SMB, which emulate it with them (and would
// refuse this process its own lock), where none is taken. It was first
// taken on the directory itself: an operator's flock(1) on the
// directory, a common guard of a cron job, then refused every open (a
// read-through, R2).
func flockLock(dir string, readOnly bool) (io.Closer, error) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && emulatesFlock(int64(st.Type)) {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, nil // NB: a read-only filesystem's index with no lock file
	}
	how := unix.LOCK_EX
	if readOnly {
		// NB: shared, so that readers of an index on a read-only
		// filesystem (where Pebble's lock holds nothing) share it, as
		// before; a writer is still refused beside a reader.
		how = unix.LOCK_SH
	}
	for {
		err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		if pid, ok := flockHolder(f); ok {
			// NB: closing f releases this process's fcntl lock too, which
			// the caller releases anyway.
			f.Close()
			return nil, &flockedError{pid: pid}
		}
	}
	// NB: f is kept open whether or not it holds the flock: closing it
	// would release the fcntl lock that Pebble just took.
	return f, nil
}

// emulatesFlock reports whether a filesystem of that type (statfs's
// f_type) makes flock(2) locks fcntl locks: NFS, SMB and CIFS.
func emulatesFlock(fsType int64) bool {
	switch fsType {
	case 0x6969, 0x517b, 0xff534d42, 0xfe534d42: // NFS, SMB, CIFS, SMB2
		return true
	}
	return false
}

// flockHolder returns the pid of another process that holds a flock on
// f's file, as /proc/locks lists it (0 when its pid is not visible, in
// another pid namespace), and whether there is one. NB: where none is
// listed, the conflict was with a lock of this process's (flock emulated
// over fcntl by a filesystem emulatesFlock does not know).
func flockHolder(f *os.File) (int, bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0, true // NB: cannot tell: the flock's refusal stands
	}
	defer locks.Close()
	ino := strconv.FormatUint(st.Ino, 10)
	me := os.Getpid()
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
		// (a blocked waiter's line starts "1: ->", which is not a holder)
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		if _, dev, ok := strings.Cut(fields[5], ":"); !ok || !strings.HasSuffix(dev, ":"+ino) {
			continue
		}
		pid, _ := strconv.Atoi(fields[4])
		if pid != me {
			return max(pid, 0), true
		}
	}
	return 0, false
}

// flockedError is flockLock's error when another process holds the
// flock: a lock error (EWOULDBLOCK), naming the process where it can.
type flockedError struct{ pid int }

func (e *flockedError) Error() string {
	return fmt.Sprintf("the lock file is locked (flock) by another process (pid %d)", e.pid)
}

func (e *flockedError) Unwrap() error { return syscall.EWOULDBLOCK }

// flockPID returns the pid that a flock error names, or 0.
func flockPID(err error) int {
	var fe *flockedError
	if errors.As(err, &fe) {
		return fe.pid
	}
	return 0
}
