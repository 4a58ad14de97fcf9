package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/lockholder"
)

// RestoreOptions are the choices of Restore.
type RestoreOptions struct {
	// Verify reads the whole copy, as Check does, before it takes dir's
	// place, and fails the restore if any of it is damaged
	// (BackupOptions.Verify): the index at dir is left as it is then.
	Verify bool
	// Logger takes the copy's log lines (Options.Logger).
	Logger *slog.Logger
}

// RestoreReport says what Restore did.
type RestoreReport struct {
	// Docs is the number of live documents in the restored index.
	Docs uint64
	// Aside is where the index that was at dir went (dir plus
	// ".before-restore-" and the time, UTC), or "" when dir was absent
	// or empty. Nothing of it is deleted: remove it once the restored
	// index is known good.
	Aside string
}

// restoreStaging is the suffix of the directory beside dir that a
// restore copies the backup into before it takes dir's name.
const restoreStaging = ".restoring"

// restoreSwapped, when set (tests), is called between the two renames of
// a restore over an existing index: the old index moved aside, the copy
// not yet in its place.
var restoreSwapped func()

// Restore puts a copy of the index in from (a backup made by
// DB.Backup, or any index this build reads) in dir's place. from is
// opened read-only and copied file by file, files of its own, into
// dir+".restoring" beside dir, synced, checked when asked
// (RestoreOptions.Verify); only then is the index at dir (a damaged one,
// typically) renamed aside, to dir+".before-restore-TIME", and the copy
// renamed to dir. from is not written, and nothing of the old index is
// deleted.
//
// dir must not be in use: Restore holds its lock from the start, and
// returns ErrLocked, having done nothing, while any process has it open
// (lshdb serve, a shell, another program). A dir that is absent, or an
// empty directory, simply receives the copy; one that holds files but no
// index is refused (ErrNotIndex). A symbolic link to the index is
// followed: the index is replaced where it is, and the link kept.
//
// The restored index has an instance of its own, and names the backup as
// its origin (Info.Origin), as every copy Backup makes does: pairs files
// made before the restore are refused on it (make them again).
//
// A restore that fails or is stopped (ctx) before the renames leaves dir
// as it was and removes its copy; a damaged copy (Verify) is moved to
// dir+".restoring.damaged" for a look. A restore killed between the two
// renames (an instant) leaves the old index at its new name and the
// complete copy at dir+".restoring": rename that to dir by hand. The next
// restore refuses to start while dir+".restoring" exists, naming it.
//
// Restore needs room for a whole copy of from beside dir, and leaves the
// disk its reserve when that is the index's disk. On Redis there is
// nothing to restore into (ErrUnsupported): a backup of a Redis index is
// a Pebble index, which lshdb serve or any command opens as it is.
func Restore(ctx context.Context, from, dir string, o *RestoreOptions) (*RestoreReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var ro RestoreOptions
	if o != nil {
		ro = *o
	}
	switch {
	case from == "" || dir == "":
		return nil, invalid("restore: an empty directory name")
	case IsRedisURL(dir):
		return nil, fmt.Errorf("%w: restore into a Redis index (a backup of one is a Pebble index of its own: open it, or build the cluster's index again from it)", ErrUnsupported)
	case IsRedisURL(from):
		return nil, fmt.Errorf("%w: restore from a Redis index (lshdb backup --db %s --to COPY makes a local copy first)", ErrUnsupported, from)
	}
	// NB: the index is replaced where it is: renaming a symbolic link
	// would move only the link, and the restore would write beside the
	// link, not the index.
	real, err := realDir(dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src, err := Open(from, &Options{ReadOnly: true, MustExist: true, ExpirySweep: -1, Logger: ro.Logger})
	if err != nil {
		return nil, fmt.Errorf("restore: the backup %s: %w", from, err)
	}
	defer src.Close()
	if fspath.Within(real, src.dir) || fspath.Within(src.dir, real) {
		return nil, fmt.Errorf("%w: restore: %s and %s are one index, or one is inside the other", ErrInvalidOptions, from, dir)
	}
	staging := real + restoreStaging
	if _, err := os.Lstat(staging); err == nil {
		return nil, fmt.Errorf("%w: restore: %s exists: a restore stopped before it ended left it (a complete copy of its backup; the index it replaced, if any, is at %s.before-restore-…): rename it to %s by hand, or remove it and restore again%w", ErrInvalidOptions, staging, real, real, unsaid{fs.ErrExist})
	}

	// NB: dir's lock is held from before the copy to after the renames:
	// no process opens the index that is about to be moved aside, and
	// none is left writing to it once moved (lshdb serve would go on
	// serving the old index under its new name).
	present, err := indexPresent(real)
	if err != nil {
		return nil, err
	}
	unlock := func() {}
	if present {
		lo := Options{fs: vfs.Default}
		lock, err := lockDirectory(real, &lo)
		if err != nil {
			if isLockError(err) {
				by := "another process"
				if pid := lockholder.PID(real); pid > 0 {
					by = fmt.Sprintf("another process (pid %d)", pid)
				}
				if err.Error() == "lock held by current process" {
					by = "this process"
				}
				return nil, fmt.Errorf("%w: restore: %s is open in %s: stop it (lshdb serve, a shell) and restore again; nothing was changed", ErrLocked, dir, by)
			}
			return nil, fmt.Errorf("lshdb: restore: locking %s: %w", dir, err)
		}
		unlock = func() { lock.Close() }
	}
	defer func() { unlock() }()

	if err := src.BackupWith(ctx, staging, BackupOptions{Verify: ro.Verify}); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("restore: the backup %s is damaged, and %s is left as it was: %w", from, dir, err)
		}
		return nil, fmt.Errorf("restore: copying %s: %w (%s is left as it was)", from, err, dir)
	}
	rep := &RestoreReport{}
	if present {
		if runtime.GOOS == "windows" {
			// NB: Windows renames no directory that holds an open file
			// (the lock's): released first, a moment before the rename.
			unlock()
			unlock = func() {}
		}
		aside, err := moveAside(vfs.Default, real, real+".before-restore-"+time.Now().UTC().Format("20060102T150405Z"))
		if err != nil {
			if aside == "" {
				os.RemoveAll(staging)
				return nil, fmt.Errorf("lshdb: restore: moving %s aside: %w (it is as it was; the copy is removed)", dir, err)
			}
			// NB: moved, but the move may not last a crash: the copy
			// goes on to take its place all the same.
		}
		rep.Aside = aside
		if restoreSwapped != nil {
			restoreSwapped()
		}
	} else if err := removeEmpty(real); err != nil {
		os.RemoveAll(staging)
		return nil, err
	}
	if err := os.Rename(staging, real); err != nil {
		if rep.Aside != "" {
			return nil, fmt.Errorf("lshdb: restore: %w: the index that was at %s is at %s, and the restored copy at %s: rename one of them to %s by hand", err, dir, rep.Aside, staging, real)
		}
		return nil, fmt.Errorf("lshdb: restore: %w: the restored copy is at %s", err, staging)
	}
	if err := syncDir(vfs.Default, filepath.Dir(real)); err != nil {
		return nil, fmt.Errorf("lshdb: restore: %w (the index is restored, but its new name may not last a crash)", err)
	}
	unlock()
	unlock = func() {}
	cp, err := Open(real, &Options{ReadOnly: true, MustExist: true, ExpirySweep: -1, Logger: ro.Logger})
	if err != nil {
		return rep, fmt.Errorf("lshdb: restore: the restored index does not open: %w", err)
	}
	defer cp.Close()
	if rep.Docs, err = cp.Count(); err != nil {
		return rep, err
	}
	return rep, nil
}

// realDir is dir with every symbolic link resolved, that of dir itself
// included; where dir is absent, its nearest ancestor's that is there,
// and the rest of its path.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(fspath.ResolveDotDot(dir))
	if err != nil {
		return "", fmt.Errorf("lshdb: restore: %w", err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: restore: %s: %w", ErrInvalidOptions, dir, err)
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%w: restore: %s is a symbolic link to nothing", ErrInvalidOptions, dir)
	}
	// NB: the nearest ancestor that is there, resolved, and the rest
	// as given (the copy makes them, as a backup makes its parents).
	rest := filepath.Base(abs)
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p {
			return "", fmt.Errorf("%w: restore: the directory of %s: %w", ErrInvalidOptions, dir, err)
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// indexPresent says whether dir holds an index (or what looks like one's
// files, damaged or not), false when it is absent or an empty directory,
// and refuses anything else: a file, a directory of other files.
func indexPresent(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("lshdb: restore: %w", err)
	case !fi.IsDir():
		return false, fmt.Errorf("%w: restore: %s is a file, not an index", ErrNotIndex, dir)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("lshdb: restore: %w", err)
	}
	if len(names) == 0 {
		return false, nil
	}
	for _, n := range names {
		if !indexFile(n.Name()) {
			return false, fmt.Errorf("%w: restore: %s holds %s, which is no index's file: restore into a new directory, or move it away first", ErrNotIndex, dir, n.Name())
		}
	}
	return true, nil
}

// removeEmpty removes dir when it is an empty directory (a rename does not
// replace a directory everywhere), and nothing when it is absent.
func removeEmpty(dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lshdb: restore: %w", err)
	}
	return nil
}
