package lockholder

import (
	"errors"
	"os"
	"slices"
	"sync"
)

// held are the directories whose lock this process holds (or is taking),
// known by identity rather than by name: Hold records one, PID never opens
// the lock file of one.
//
// NB: the lock is a POSIX record (fcntl) lock, which never excludes the
// process that holds it, and which the process loses on closing any
// descriptor of the lock file, not only the one it locked with. Two
// handles of one index under different names ("idx", "./idx", a link, a
// bind mount) wrote it both and lost synced writes on reopen; and PID,
// which opens the lock file to ask who holds it and closes it again,
// released this process's own lock when asked about an index this
// process had open (a refused second Open, or Drop, of it): another
// process could then open the index and write it beside this one, and
// the writes of one were lost (an embedder's review).
var held struct {
	sync.Mutex
	dirs []*Held
}

// Held is a directory that Hold recorded.
type Held struct{ fi os.FileInfo }

// ErrHeldHere is Hold's error for a directory this process holds. NB:
// Pebble's own words for a lock the process holds.
var ErrHeldHere = errors.New("lock held by current process")

// Hold records dir as locked by this process, to be done before its lock
// is taken, or returns ErrHeldHere if it is already, under any name.
// Where dir cannot be read it records nothing (a nil *Held): the lock's
// own open reports what is wrong.
func Hold(dir string) (*Held, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil
	}
	held.Lock()
	defer held.Unlock()
	if heldLocked(fi) {
		return nil, ErrHeldHere
	}
	h := &Held{fi: fi}
	held.dirs = append(held.dirs, h)
	return h, nil
}

// Info is the directory's FileInfo when Hold recorded it, for
// os.SameFile (nil for a nil h).
func (h *Held) Info() os.FileInfo {
	if h == nil {
		return nil
	}
	return h.fi
}

// Release forgets h, once its lock is released (a nil h is nothing).
func (h *Held) Release() {
	if h == nil {
		return
	}
	held.Lock()
	defer held.Unlock()
	if i := slices.Index(held.dirs, h); i >= 0 {
		held.dirs = slices.Delete(held.dirs, i, i+1)
	}
}

// heldLocked reports whether fi is a directory of held (held's lock taken).
func heldLocked(fi os.FileInfo) bool {
	return slices.ContainsFunc(held.dirs, func(h *Held) bool { return os.SameFile(h.fi, fi) })
}
