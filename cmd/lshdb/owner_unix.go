//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// releaseFile ends f for its reader (a pipe's end of input) without
// freeing its descriptor: /dev/null takes its place, so that a file the
// process opens later (the index's, on a handover) never gets the
// descriptor of stdout, where a write to fd 1 would land in it.
func releaseFile(f *os.File) error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return f.Close()
	}
	defer null.Close()
	return unix.Dup2(int(null.Fd()), int(f.Fd()))
}

// processUmask is the process's umask: the permissions an output file does
// not get (outputMode). NB: read once, before any goroutine of the
// command's can create a file: umask(2) only reads it by setting it, and
// for that instant a file made elsewhere would get no mask (Linux shows
// it in /proc/self/status, read first).
var processUmask = func() fs.FileMode {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(m) & fs.ModePerm
				}
			}
		}
	}
	m := unix.Umask(0)
	unix.Umask(m)
	return fs.FileMode(m) & fs.ModePerm
}()

// openFileLimit is the process's bound on open files (its soft
// RLIMIT_NOFILE, which Go raises to the hard one at start), or 1024 when
// it cannot be read.
func openFileLimit() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	return int(min(r.Cur, 1<<30))
}

// openDescriptors returns how many files the process has open, where the
// system lists them (/proc/self/fd on Linux), else 0.
func openDescriptors() int {
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return max(0, len(names)-1) // NB: less the listing's own
}

// strangersLink reports whether link, a symbolic link, is one that Linux's
// fs.protected_symlinks forbids following: in a sticky directory that
// others may write (/tmp), owned neither by this process's user nor by
// the directory's owner. lshdb resolves an output's link itself (to
// write beside its target and rename), which the kernel's check does
// not see.
func strangersLink(link string) bool {
	li, err := os.Lstat(link)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		return false // NB: a file of another user's is no link (writable asks of any path)
	}
	di, err := os.Stat(filepath.Dir(link))
	if err != nil {
		return false
	}
	ls, ok1 := li.Sys().(*syscall.Stat_t)
	ds, ok2 := di.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return false
	}
	shared := di.Mode()&fs.ModeSticky != 0 && di.Mode().Perm()&0o002 != 0
	return shared && int(ls.Uid) != os.Geteuid() && ls.Uid != ds.Uid
}
