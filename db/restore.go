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
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/internal/fspath"
)

// RestoreOptions are the choices of Restore.
type RestoreOptions struct {
	// Verify reads the whole copy, as Check does, before it takes dir's
	// place, and fails the restore if any of it is damaged
	// (BackupOptions.Verify): the index at dir is left as it is then.
	Verify bool
	// Logger takes the copy's log lines (Options.Logger).
	Logger *slog.Logger
	// DiskReserve is the free space, in bytes, that the copy must leave
	// on dir's filesystem, where the restored index is written to next
	// and the index it replaces is kept aside: Options.DiskReserve's
	// meaning and default (0: DefaultDiskReserve; negative: no check).
	DiskReserve int64
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
// dir+".restoring.damaged" for a look. One killed while it copies leaves
// a hidden ".NAME.restoring.lshdb-backup.tmp" beside dir, which the next
// restore removes; one killed after its copy, dir as it was and the copy
// at dir+".restoring"; one killed between the two renames (an instant),
// the old index at its new name and the copy at dir+".restoring": rename
// that to dir by hand. Open refuses dir meanwhile (RestoreStoppedError,
// which names both), so that no write makes an empty index in its place
// (nor one of the restore into an absent dir, killed before its rename).
// The next restore refuses to start while
// dir+".restoring" exists, saying which it is. A failure after the old
// index moved returns the report with Aside set beside the error.
//
// Restore needs room for a whole copy of from on dir's filesystem, and
// leaves that disk its reserve (RestoreOptions.DiskReserve): it refuses to
// start without, with ErrDiskFull, having written nothing.
// dir may not be a mount point (it could not be renamed: restore into a
// directory inside it) nor the working directory. On Redis there is
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
	// NB: with the restore's reserve, which the copy's own check of the
	// backup's disk keeps (a read-through's R2: --disk-reserve was
	// ignored where the backup is on the index's disk).
	src, err := Open(from, &Options{ReadOnly: true, MustExist: true, ExpirySweep: -1, Logger: ro.Logger, DiskReserve: ro.DiskReserve})
	if err != nil {
		return nil, fmt.Errorf("restore: the backup %s: %w", from, err)
	}
	defer src.Close()
	if fspath.Within(real, src.dir) || fspath.Within(src.dir, real) {
		return nil, fmt.Errorf("%w: restore: %s and %s are one index, or one is inside the other", ErrInvalidOptions, from, dir)
	}
	staging := real + restoreStaging
	if err := restorePlace(real, dir); err != nil {
		return nil, err
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
				by, here := lockHolder(real, err)
				if here {
					by = "this process"
				}
				return nil, fmt.Errorf("%w: restore: %s is open in %s: stop it (lshdb serve, a shell) and restore again; nothing was changed", ErrLocked, dir, by)
			}
			return nil, fmt.Errorf("lshdb: restore: locking %s: %w", dir, err)
		}
		unlock = func() { lock.Close() }
	}
	defer func() { unlock() }()
	// NB: checked under the lock, with the words for what is there: a
	// restore killed between its renames left the old index aside and
	// the copy staged; one killed before them, the index in place.
	//
	// NB: not ErrInvalidOptions, whose exit status (2) tells a script to
	// mend its command line (an operator's review, OP-4): the state of
	// the disk stops it. Beside an absent index the error is the
	// RestoreStoppedError every command gets there (ErrNotExist); beside
	// one in place, fs.ErrExist.
	if _, err := os.Lstat(staging); err == nil {
		what := fmt.Sprintf("a restore stopped after its copy left it (a complete copy of its backup), and the index at %s is as it was: remove it and restore again", dir)
		if !present {
			aside := real + ".before-restore-…"
			var stopped *RestoreStoppedError
			if errors.As(restoreStopped(vfs.Default, real), &stopped) && len(stopped.Aside) > 0 {
				aside = stopped.Aside[len(stopped.Aside)-1]
			}
			what = fmt.Sprintf("a restore stopped between its renames left it (a complete copy of its backup; the index it replaced, if there was one, is at %s): rename it to %s, or remove it and restore again", aside, real)
			if stopped != nil {
				return nil, fmt.Errorf("lshdb: restore: %s exists: %s%w", staging, what, unsaid{stopped})
			}
		}
		return nil, fmt.Errorf("lshdb: restore: %s exists: %s%w", staging, what, unsaid{fs.ErrExist})
	}

	if err := restoreRoom(src, real, dir); err != nil {
		return nil, err
	}
	if err := src.BackupWith(ctx, staging, BackupOptions{Verify: ro.Verify}); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("restore: the backup %s is damaged, and %s is left as it was: %w", from, dir, err)
		}
		return nil, fmt.Errorf("restore: copying %s: %w (%s is left as it was)", from, err, dir)
	}
	// NB: the copy is opened and counted before it takes dir's place,
	// under dir's lock: opened after, it was refused as locked when a
	// supervisor's serve took the restored index first, and the restore
	// said it failed (a read-through's R1).
	rep := &RestoreReport{}
	if err := stageRestored(staging, real, present, ro.Logger, rep); err != nil {
		os.RemoveAll(staging)
		return nil, fmt.Errorf("%w (%s is left as it was; the copy is removed)", err, dir)
	}
	if present {
		if runtime.GOOS == "windows" {
			// NB: Windows renames no directory that holds an open file
			// (the lock's): released first, a moment before the rename.
			unlock()
			unlock = func() {}
		}
		aside, err := moveAside(vfs.Default, real, real+".before-restore-"+time.Now().UTC().Format("20060102T150405Z"))
		if err != nil && aside == "" {
			os.RemoveAll(staging)
			return nil, fmt.Errorf("lshdb: restore: moving %s aside: %w (it is as it was; the copy is removed)", dir, err)
		}
		// NB: moved, but the move may not last a crash: the copy goes on
		// to take its place all the same.
		rep.Aside = aside
		if restoreSwapped != nil {
			restoreSwapped()
		}
	} else if err := removeEmpty(real); err != nil {
		os.RemoveAll(staging)
		return nil, err
	}
	if !present {
		// NB: no lock held an absent dir: one made meanwhile (by a
		// create) is not replaced (a rename replaces an empty directory).
		if _, err := os.Lstat(real); err == nil {
			return nil, fmt.Errorf("lshdb: restore: %s was made while the restore copied (the restored copy is at %s)%w", dir, staging, unsaid{fs.ErrExist})
		}
	}
	if err := os.Rename(staging, real); err != nil {
		if rep.Aside != "" {
			// NB: the old index is put back where it was, if it can be.
			if os.Rename(rep.Aside, real) == nil {
				syncDir(vfs.Default, filepath.Dir(real))
				return nil, fmt.Errorf("lshdb: restore: %w: %s is as it was, and the restored copy at %s", err, dir, staging)
			}
			return rep, fmt.Errorf("lshdb: restore: %w: the index that was at %s is at %s, and the restored copy at %s: rename one of them to %s by hand", err, dir, rep.Aside, staging, real)
		}
		return nil, fmt.Errorf("lshdb: restore: %w: the restored copy is at %s", err, staging)
	}
	if err := syncDir(vfs.Default, filepath.Dir(real)); err != nil {
		aside := ""
		if rep.Aside != "" {
			aside = ", and the index that was there is at " + rep.Aside
		}
		return rep, fmt.Errorf("lshdb: restore: %w (the index is restored%s, but the new names may not last a crash)", err, aside)
	}
	return rep, nil
}

// RestoreStoppedError is Open's error for a directory that holds no index
// (absent, or empty) beside the copy of a restore that stopped before the
// copy took the directory's name: killed between its two renames (the
// index it replaced at Aside), or, into a directory that held no index,
// before its one rename (no Aside). The copy at Staging is complete. The
// index is not made there anew: a write would have made an empty index in
// its place, which the next restore took for the one to replace. It
// matches ErrNotExist.
type RestoreStoppedError struct {
	Dir     string   // the index's directory, as given to Open
	Staging string   // the restored copy: Dir's real path plus ".restoring"
	Aside   []string // the index it replaced, if any (".before-restore-TIME"), oldest first
}

func (e *RestoreStoppedError) Error() string {
	finish := fmt.Sprintf("rename %s to %s to finish the restore", e.Staging, strings.TrimSuffix(e.Staging, restoreStaging))
	if len(e.Aside) == 0 {
		return fmt.Sprintf("%v: %s: a restore into it stopped before its copy took its name (or is taking it now): the copy, complete, is at %s: %s, or remove the copy", ErrNotExist, e.Dir, e.Staging, finish)
	}
	return fmt.Sprintf("%v: %s: a restore over it stopped between its two renames (or is between them now): the restored copy, complete, is at %s, and the index it replaced at %s: %s, or rename the index back to undo it", ErrNotExist, e.Dir, e.Staging, e.Aside[len(e.Aside)-1], finish)
}

func (e *RestoreStoppedError) Is(target error) bool { return target == ErrNotExist }

// restoreStopped returns a *RestoreStoppedError if a restore's copy of dir
// (which holds no index) waits beside it, else nil. A symbolic link to
// nothing is followed to the name it gives: a restore renames the index
// it leads to.
func restoreStopped(fsys vfs.FS, dir string) error {
	real := dir
	if fsys == vfs.Default {
		real = fspath.Resolve(dir) // NB: a link to a directory resolved
		if _, err := os.Stat(dir); err != nil {
			// NB: a link to nothing is left as it is by Resolve (the name
			// of the link, in its resolved parent), and read here.
			if target, err := os.Readlink(dir); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(real), target)
				}
				real = fspath.Resolve(target)
			}
		}
	}
	staging := real + restoreStaging
	if fi, err := fsys.Stat(staging); err != nil || !fi.IsDir() {
		return nil
	}
	e := &RestoreStoppedError{Dir: dir, Staging: staging}
	parent, base := fsys.PathDir(real), fsys.PathBase(real)
	if names, err := fsys.List(parent); err == nil {
		slices.Sort(names) // NB: the time in the name, UTC, sorts as it reads
		for _, n := range names {
			if strings.HasPrefix(n, base+".before-restore-") {
				e.Aside = append(e.Aside, fsys.PathJoin(parent, n))
			}
		}
	}
	return e
}

// restoreRoom refuses a restore whose copy of src would take dir's
// filesystem (the parent of real, where the copy is staged) below the
// reserve src was opened with (RestoreOptions.DiskReserve): the copy was checked against the reserve
// of the backup's disk only, so a restore from another disk could leave
// dir's full, and the restored index's next writable open was refused (a
// read-through's R9). The index that the copy replaces stays on that disk
// (aside), so its files free nothing.
func restoreRoom(src *DB, real, dir string) error {
	reserve := src.opts.DiskReserve // NB: the restore's, resolved (Open)
	if reserve < 0 {
		return nil
	}
	need := src.storeBytes()
	need += need / 64
	parent := filepath.Dir(real)
	free, err := backupTargetFree(parent)
	if err != nil || free-need >= reserve {
		return nil // NB: a filesystem that cannot tell is not checked
	}
	return fmt.Errorf("%w: restore: %s has %s free, and the copy needs %s and leaves %s in reserve for the restored index's writes (RestoreOptions.DiskReserve); %s is left as it was",
		ErrDiskFull, parent, mib(free), mib(need), mib(reserve), dir)
}

// restorePlace refuses a place a restore cannot swap (dir as given, real
// resolved): a mount point, whose directory cannot be renamed (a
// container's volume: the copy was made on the parent's filesystem and
// then failed, a read-through's R3), and the working directory, which
// would go aside with the old index (a command after it, --db ., read
// the old one: R5).
func restorePlace(real, dir string) error {
	fi, err := os.Stat(real)
	if err != nil {
		return nil // NB: absent: made by the rename
	}
	if otherDevice(real, filepath.Dir(real)) {
		return fmt.Errorf("%w: restore: %s is a mount point, which cannot be renamed: restore into a directory inside it (--db %s), and give that to the index's users", ErrInvalidOptions, dir, filepath.Join(dir, "index"))
	}
	if wd, err := os.Getwd(); err == nil {
		if wi, err := os.Stat(wd); err == nil && os.SameFile(wi, fi) {
			return fmt.Errorf("%w: restore: %s is the working directory, which would go aside with the old index: run the restore from its parent", ErrInvalidOptions, dir)
		}
	}
	return nil
}

// stageRestored opens the copy in staging read-only and counts its
// documents into rep, and gives it the permissions and owner of the index
// at real (present) before it takes its place: a copy has the mode of the
// backup and the restoring user's files, and an index of mode 0700,
// restored by root, became one of 0755 that its own user could not write
// (a read-through's R4).
func stageRestored(staging, real string, present bool, logger *slog.Logger, rep *RestoreReport) error {
	cp, err := Open(staging, &Options{ReadOnly: true, MustExist: true, ExpirySweep: -1, Logger: logger})
	if err != nil {
		return fmt.Errorf("lshdb: restore: the copy does not open: %w", err)
	}
	rep.Docs, err = cp.Count()
	if cerr := cp.Close(); err == nil {
		err = cerr
	}
	if err != nil || !present {
		return err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("lshdb: restore: %w", err)
	}
	if err := os.Chmod(staging, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("lshdb: restore: %w", err)
	}
	return chownLike(staging, fi)
}

// realDir is dir with the symbolic links of its longest existing prefix
// resolved, that of dir itself included (fspath.Resolve), refusing a dir
// that is a symbolic link to nothing: the rename would replace the link.
func realDir(dir string) (string, error) {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("%w: restore: %s is a symbolic link to nothing: %w", ErrInvalidOptions, dir, err)
		}
	}
	return fspath.Resolve(dir), nil
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
