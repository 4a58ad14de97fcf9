package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/fspath"
)

// Backup writes a consistent copy of the open database into dir, which
// must not exist: the state of one instant, while writers go on. The copy
// is a complete database (its manifest included) that Open reads like the
// original. It uses Pebble's Checkpoint: table files are hard-linked when
// dir is on the same filesystem (cheap, and they take no space until the
// original compacts them away), copied otherwise; the write-ahead log and
// the store's manifest are copied. The copy has an instance of its own
// (Info.Instance), and its Info.Origin names the original and the state
// it copied: until the copy is written, what was derived from the
// original in that state (a pairs file) holds for it.
//
// NB: the write-ahead log is synced first, so that the copy holds every
// write acknowledged before the call, NoSync ones too.
//
// A database opened read-only (one on a read-only filesystem, or on a
// disk too full to open it for writing) is copied file by file instead:
// Pebble v2.1.7's Checkpoint of a read-only store looks for an OPTIONS
// file that a read-only open never wrote. No writer can change the files
// meanwhile (the handle holds the index's lock), so the copy is the state
// the handle reads. It is made in a directory beside dir, synced, and
// renamed to dir once complete.
//
// Backup checks ctx before it starts; a checkpoint is one step that
// cannot be interrupted, a read-only handle's copy stops between files.
// A failed backup removes what it wrote of dir.
//
// On Redis, Backup copies the index into a new Pebble index in dir (a
// local, embedded copy: for a backup of its own, or for a nightly pairs
// run at Pebble's speed): every live document's record and band buckets
// as stored, its postings and id, in insertion order, with the same
// parameters (BenchmarkRedis: 20,000 documents copied in 0.63 s; the copy
// and a pairs run on it took 0.76-0.78x the time of pairs on Redis, which
// is 4.3x Pebble's). There is
// no snapshot: each document is copied as it is when read, and one
// written or deleted meanwhile may or may not be in the copy. The copy is
// built in a directory beside dir and renamed to dir once complete and
// synced; ctx stops it (the partial copy is removed). The servers' own
// RDB or AOF files back up the cluster itself.
func (db *DB) Backup(ctx context.Context, dir string) error {
	return db.BackupWith(ctx, dir, BackupOptions{})
}

// BackupOptions are the choices of BackupWith; the zero value is Backup.
type BackupOptions struct {
	// Copy gives the copy files of its own: each table that the
	// checkpoint hard-linked to the index's file is replaced by a copy,
	// synced, before the copy gets its name. On the same filesystem a
	// plain backup's tables are the index's files, so damage to the
	// disk's bytes of one is damage to both; a copy survives it, for the
	// time and space of a full copy. A backup killed meanwhile leaves no
	// copy under dir (only its temporary directory, which the next backup
	// into the same directory removes). Without effect on Redis and on a
	// read-only handle, whose copies are made of files of their own.
	Copy bool
	// Verify reads the whole copy, as Check does, before it gets dir's
	// name, and fails the backup if any of it is damaged: a backup of a
	// damaged index is no backup. A damaged copy is moved to
	// dir+".damaged" (or dir+".damaged-N", the first N free), for a look,
	// and the error (ErrCorrupt) names it; a verification stopped by ctx,
	// or that fails to read, removes the copy. Either way nothing is
	// under dir, so that a copy under dir is a verified one, even after a
	// backup killed while it verified: a script may take dir's existence
	// for a good backup. Costs a read of the whole copy (as Check: its
	// shingles hashed again).
	Verify bool
}

// BackupWith is Backup with options.
func (db *DB) BackupWith(ctx context.Context, dir string, o BackupOptions) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	// NB: Close ends it (ErrClosed): a verification (Verify) reads the
	// whole copy, and Close waited for it (a maintainer's review).
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	db.backupMu.Lock()
	defer db.backupMu.Unlock()
	if db.opts.FS == vfs.Default {
		// NB: as Open: the copy goes where the system resolves dir, which
		// a caller's check of it (httpapi's backup root) also resolves.
		dir = fspath.ResolveDotDot(dir)
	}
	if db.rkv != nil {
		if err := db.checkBackupDir(dir); err != nil {
			return err
		}
		return db.redisBackup(ctx, dir, o.Verify)
	}
	if err := db.checkBackupDir(dir); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		return db.copyFiles(ctx, dir, o.Verify)
	}
	// NB: a checkpoint costs little space when hard links work, but a
	// full copy when they do not (another filesystem): the reserve is
	// checked only for the database's own filesystem, as for writes.
	if err := db.opts.FS.MkdirAll(db.opts.FS.PathDir(dir), 0o755); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			// NB: a place the backup cannot be made is the caller's to
			// change (the API answered 500 internal for /proc/bk).
			return fmt.Errorf("%w: backup directory %s: %w", ErrInvalidOptions, dir, err)
		}
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	if parent := db.opts.FS.PathDir(dir); db.opts.FS == vfs.Default && onOtherDevice(parent, db.dir) {
		// NB: on another filesystem no table can be linked: the
		// checkpoint copies the whole store there, and one that did not
		// fit filled the target to its last byte before it failed (a
		// backup volume shared with other jobs; an SRE's SR7). Refused
		// first, as copyFiles refuses.
		if need := db.storeBytes(); need > 0 {
			if free, err := backupTargetFree(parent); err == nil && free < need+need/64 {
				return fmt.Errorf("%w: backup: %s has %s free, and the copy of %s, on another filesystem, needs %s", ErrDiskFull, parent, mib(free), db.dir, mib(need))
			}
		}
	}
	if o.Copy {
		// NB: a copy of its own is a whole copy of the store, on the
		// index's own filesystem whenever it has an effect (links work
		// there only): refused, as a write, without room for it beyond
		// the reserve (Pebble panics when the disk fills). It checked
		// nothing (a review); the read-only copy does (copyFiles), and
		// a copy to another filesystem is checked above.
		if err := db.roomFor(db.storeBytes()); err != nil {
			return fmt.Errorf("backup with files of its own (a whole copy of the store): %w", err)
		}
	}
	// NB: made beside dir and renamed once stamped (stampBackup), so that
	// dir is never a copy with the original's instance.
	// NB: every write acknowledged so far is made durable first, and is
	// then in the log files the checkpoint copies: Pebble's
	// WithFlushedWAL synced the log by a commit that panicked on a full
	// disk, and hung on a stopped store (a maintainer's review, C3-3).
	// A stopped store refuses the backup as it refuses a write: reopen
	// it, and the log's acknowledged writes are replayed.
	if err := db.syncLog(); err != nil {
		return fmt.Errorf("lshdb: backup to %s: syncing the write-ahead log first: %w", dir, err)
	}
	tmp, release, err := db.backupTemp(dir)
	if err != nil {
		return err
	}
	defer release()
	if err := db.pdb.Checkpoint(tmp); err != nil {
		db.opts.FS.RemoveAll(tmp)
		return classify(fmt.Errorf("lshdb: backup to %s: %w", dir, err))
	}
	if err := db.keepDirMode(tmp); err != nil {
		db.opts.FS.RemoveAll(tmp)
		return err
	}
	if o.Copy {
		// NB: before the rename: a copy killed while it replaced the
		// links was a complete-looking dir sharing tables with the index.
		if err := db.unlinkTables(ctx, tmp); err != nil {
			db.opts.FS.RemoveAll(tmp)
			return err
		}
	}
	if backupCopiedHook != nil {
		backupCopiedHook(tmp)
	}
	return db.finishBackup(ctx, tmp, dir, o.Verify)
}

// keepDirMode gives a backup's directory tmp the permissions of the
// index's directory for the group and others (its owner all of them),
// which are what keeps others from its files (the
// tables are hard links to the index's, and the rest is made with the
// umask).
//
// NB: a backup of an index in a directory of mode 0700 (as the README
// advises for private texts) was a directory of mode 0755, and any user
// could copy it and read every text (a security review). The checkpoint's
// own directory is Pebble's, made 0755 less the umask: it is restricted
// once the checkpoint is made, before the copy's own files are written
// (Copy) and before it takes its name.
func (db *DB) keepDirMode(tmp string) error {
	if db.opts.FS != vfs.Default || db.rkv != nil {
		return nil
	}
	fi, err := os.Stat(db.dir)
	if err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	// NB: the owner keeps every right: the backup writes its stamp, and
	// its copies (Copy), there, and a read-only index's copy is writable.
	if err := os.Chmod(tmp, fi.Mode().Perm()|0o700); err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	return nil
}

// backupCopyHook, when set (by tests), is called with each file's name
// before BackupOptions.Copy copies it.
var backupCopyHook func(name string)

// unlinkTables replaces each file of the checkpoint in tmp that is a
// hard link to the index's file of that name with a copy of its own,
// synced. On a filesystem other than the system's, where links cannot be
// told apart from copies, every file the index also holds is copied.
func (db *DB) unlinkTables(ctx context.Context, tmp string) error {
	fsys := db.opts.FS
	names, err := fsys.List(tmp)
	if err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	for _, n := range names {
		if ctx != nil && ctx.Err() != nil {
			return ctxErr(ctx)
		}
		p, src := fsys.PathJoin(tmp, n), fsys.PathJoin(db.dir, n)
		b, err := fsys.Stat(p)
		if err != nil {
			return fmt.Errorf("lshdb: backup: %w", err)
		}
		if !b.Mode().IsRegular() {
			continue
		}
		if fsys == vfs.Default {
			// NB: os's own FileInfo: SameFile tells nothing of another.
			b, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("lshdb: backup: %w", err)
			}
			o, err := os.Stat(src)
			if err != nil || !os.SameFile(o, b) {
				continue // NB: copied by the checkpoint (the log, the manifest)
			}
		} else if _, err := fsys.Stat(src); err != nil {
			continue
		}
		if backupCopyHook != nil {
			backupCopyHook(n)
		}
		own := p + ".copy"
		if err := copyFile(fsys, p, own); err != nil {
			fsys.Remove(own)
			return fmt.Errorf("lshdb: backup: copying %s: %w", n, err)
		}
		if err := fsys.Rename(own, p); err != nil {
			fsys.Remove(own)
			return fmt.Errorf("lshdb: backup: %w", err)
		}
	}
	return nil
}

// backupTemp returns the directory beside dir that a backup to dir is
// made in, empty (what a killed backup left there is removed), and the
// function that releases it, which the caller MUST call once the backup
// has ended, done or not. While the backup runs, it holds a file beside
// the directory that names its process (backupOwnerSuffix), locked, so
// that a later backup into the same parent removes what a killed one
// left under another name (sweepBackupTemps): a nightly backup to a
// dated name never reuses one, and a killed backup's copy (hard links
// to the index's tables, or a whole copy on another filesystem) was left
// for ever.
func (db *DB) backupTemp(dir string) (tmp string, release func(), _ error) {
	fsys := db.opts.FS
	parent := fsys.PathDir(dir)
	tmp = backupTempOf(fsys, dir)
	sweepBackupTemps(fsys, parent)
	owner := tmp + backupOwnerSuffix
	// NB: another backup to dir under way is refused: its directory was
	// removed under it, which failed it with a raw "no such file", and
	// the later one could have renamed the other's partial copy to dir
	// (an operator's review). The owner file is claimed first, and the
	// directory emptied after: of two backups starting at once, the one
	// refused touches nothing of the other's.
	c, err := claimOwner(fsys, owner, false)
	if err != nil {
		if errors.Is(err, errOwnerBusy) {
			if pid, _ := ownerPID(fsys, owner); pid > 0 {
				return "", nil, fmt.Errorf("%w: another backup to %s is under way (pid %d): wait for it to end", ErrLocked, dir, pid)
			}
			return "", nil, fmt.Errorf("%w: another backup to %s is under way: wait for it to end", ErrLocked, dir)
		}
		return "", nil, classify(fmt.Errorf("lshdb: backup: %w", err))
	}
	if err := fsys.RemoveAll(tmp); err != nil {
		c.release()
		return "", nil, fmt.Errorf("lshdb: backup: %w", err)
	}
	return tmp, c.release, nil
}

// errOwnerBusy says that a live backup holds the owner file.
var errOwnerBusy = errors.New("the owner file is held")

// ownerClaim is a backup's owner file, claimed (claimOwner).
type ownerClaim struct {
	fsys  vfs.FS
	owner string
	f     *os.File // locked; nil where the pid is the proof
}

// release removes the owner file, and then lets go of its lock: NB, in
// that order (see claimOwner).
func (c *ownerClaim) release() {
	c.fsys.Remove(c.owner)
	c.abandon()
}

// abandon lets go of the owner file's lock and leaves the file.
func (c *ownerClaim) abandon() {
	if c.f != nil {
		c.f.Close()
	}
}

// Test hooks: lockOwnerHook takes a lock in lockOwner's place, and
// ownerOpened runs between an owner file's open and its lock. Both nil
// outside tests.
var (
	lockOwnerHook func(*os.File) error
	ownerOpened   func()
)

// claimOwner makes the owner file of a backup's temporary directory, or
// takes over a dead backup's, and names this process in it ("PID HOST";
// not for a sweep, which only removes what it claims). It returns
// errOwnerBusy when a live backup holds it.
//
// On the system's filesystem, a live backup is one that holds the
// file's lock (flock, ownerLocks), which its process's end lets go of
// however it ends: a pid was no proof, since the pid a killed backup
// named may run again (PID 1 in a container, or the same pid after a
// restart) and refused every later backup to that name for good (a
// maintainer's review). Elsewhere (no locks, a filesystem that takes
// none, another vfs.FS) the pid is the proof (claimByPID).
func claimOwner(fsys vfs.FS, owner string, sweep bool) (*ownerClaim, error) {
	if fsys != vfs.Default || !ownerLocks {
		return claimByPID(fsys, owner, sweep)
	}
	host, _ := os.Hostname()
	stamp := fmt.Sprintf("%d %s\n", os.Getpid(), host)
	for try := 0; ; try++ {
		// NB: noFollow: the owner file's name is known beforehand, and
		// another user's link there, in a shared directory such as /tmp,
		// had the backup create the file it named (an empty file of
		// root's anywhere), and then refuse every backup to that name as
		// one under way (a security review, SEC2-7).
		flag := os.O_RDWR | os.O_CREATE | noFollow
		if sweep {
			flag = os.O_RDWR | noFollow // NB: a sweep makes no owner file
		}
		f, err := os.OpenFile(owner, flag, 0o644)
		if err != nil {
			if li, lerr := os.Lstat(owner); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%w: backup: %s is a symbolic link, which no backup makes (another user's, in a directory others may write?): not followed; remove it, or back up to another name", ErrInvalidOptions, owner)
			}
			return nil, err
		}
		if ownerOpened != nil {
			ownerOpened()
		}
		lock := lockOwner
		if lockOwnerHook != nil {
			lock = lockOwnerHook
		}
		if err := lock(f); err != nil {
			if !errors.Is(err, errOwnerBusy) {
				// NB: a filesystem that takes no lock (NFS without its
				// lock daemon: ENOLCK; some FUSE ones): the pid is the
				// proof there, as before locks. The empty file this open
				// made goes first.
				if fi, serr := f.Stat(); serr == nil && fi.Size() == 0 && !sweep {
					os.Remove(owner)
				}
				f.Close()
				return claimByPID(fsys, owner, sweep)
			}
			f.Close()
			return nil, err
		}
		// NB: the lock must be on the file the name gives still. A backup
		// that ends removes its owner file before it lets go of the lock,
		// and a file opened before that removal is no one's: two backups
		// taking it and a third making a new one would all run.
		fi, err := f.Stat()
		li, lerr := os.Lstat(owner)
		if err == nil && lerr == nil && os.SameFile(fi, li) {
			c := &ownerClaim{fsys: fsys, owner: owner, f: f}
			if sweep {
				return c, nil
			}
			if err = f.Truncate(0); err == nil {
				if _, err = f.WriteAt([]byte(stamp), 0); err == nil {
					err = f.Sync()
				}
			}
			if err != nil {
				c.release()
				return nil, err
			}
			return c, nil
		}
		f.Close()
		if sweep || try == 10 {
			return nil, errOwnerBusy
		}
	}
}

// claimByPID claims a backup's owner file where no lock is taken: one
// that names a process of this host that runs (this one included) is a
// live backup's. On the system's filesystem it is made exclusively, so
// of two backups starting at once one is refused; one found there that
// names no process (a backup's own, just made and not yet stamped) is
// taken as live too.
func claimByPID(fsys vfs.FS, owner string, sweep bool) (*ownerClaim, error) {
	host, _ := os.Hostname()
	live := func() bool {
		pid, h := ownerPID(fsys, owner)
		return pid > 0 && h == host && (pid == os.Getpid() || processRuns(pid))
	}
	if live() {
		return nil, errOwnerBusy
	}
	c := &ownerClaim{fsys: fsys, owner: owner}
	if sweep {
		return c, nil
	}
	var f interface {
		io.WriteCloser
		Sync() error
	}
	if fsys == vfs.Default {
		of, err := os.OpenFile(owner, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			if pid, _ := ownerPID(fsys, owner); pid == 0 || live() {
				return nil, errOwnerBusy
			}
			os.Remove(owner) // a dead backup's: replaced, once
			of, err = os.OpenFile(owner, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return nil, errOwnerBusy
			}
		}
		if err != nil {
			return nil, err
		}
		f = of
	} else {
		vf, err := fsys.Create(owner, vfs.WriteCategoryUnspecified)
		if err != nil {
			return nil, err
		}
		f = vf
	}
	_, err := fmt.Fprintf(f, "%d %s\n", os.Getpid(), host)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// ownerPID returns the pid and host that a backup's owner file names,
// or 0 and "" when it cannot be read.
func ownerPID(fsys vfs.FS, owner string) (pid int, host string) {
	f, err := fsys.Open(owner)
	if err != nil {
		return 0, ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 512))
	f.Close()
	if err != nil {
		return 0, ""
	}
	if _, err := fmt.Sscanf(string(b), "%d %s", &pid, &host); err != nil || pid <= 0 {
		return 0, ""
	}
	return pid, host
}

// backupTempSuffix ends the name of a backup's temporary directory, and
// backupOwnerSuffix that of the file beside it that names the process
// making it: "PID HOST".
const (
	backupTempSuffix  = ".lshdb-backup.tmp"
	backupOwnerSuffix = ".owner"
)

// sweepBackupTemps removes from parent the temporary directories of
// backups that are gone (killed mid-way), with their owner files: those
// a process of this host made, that no longer holds its owner file (see
// claimOwner). One without an owner file (an earlier lshdb's), another
// host's, or one whose backup may still run is left.
func sweepBackupTemps(fsys vfs.FS, parent string) {
	names, err := fsys.List(parent)
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	for _, n := range names {
		if strings.HasPrefix(n, ".") && strings.HasSuffix(n, backupTempSuffix+backupOwnerSuffix) {
			sweepBackupTemp(fsys, fsys.PathJoin(parent, n), host)
		}
	}
}

// sweepBackupTemp removes the temporary directory whose owner file is
// owner, with the file, if a process of host made it and no longer holds
// it (sweepBackupTemps).
func sweepBackupTemp(fsys vfs.FS, owner, host string) {
	if _, h := ownerPID(fsys, owner); h != host {
		return
	}
	// NB: claimed as a new backup claims it: a live backup's is
	// refused, and while the sweep holds it no backup takes it.
	c, err := claimOwner(fsys, owner, true)
	if err != nil {
		return
	}
	// NB: the owner file stays with a directory not wholly removed,
	// so that a later sweep tries again.
	if fsys.RemoveAll(strings.TrimSuffix(owner, backupOwnerSuffix)) == nil {
		c.release()
	} else {
		c.abandon()
	}
}

// backupTempOf is the temporary directory of a backup to dir: hidden
// beside it (".NAME.lshdb-backup.tmp"), renamed to dir once whole.
func backupTempOf(fsys vfs.FS, dir string) string {
	return fsys.PathJoin(fsys.PathDir(dir), "."+fsys.PathBase(dir)+backupTempSuffix)
}

// restoreCopyNote is what an ErrNotExist of dir adds when a restore into
// it left its partial copy beside it (restoreCopyOf), or is copying.
func restoreCopyNote(fsys vfs.FS, dir string) string {
	tmp := restoreCopyOf(fsys, resolvedDir(fsys, dir))
	if tmp == "" {
		return ""
	}
	return fmt.Sprintf(" (a restore into it is copying its backup, or was stopped while it did: %s, %s, its partial copy; the next restore into it, or making an index there, removes a stopped one that this host made)", tmp, mib(int64(dirBytes(fsys, tmp))))
}

// restoreCopyOf returns the hidden directory beside dir (its real path)
// that a restore into it copies the backup to before the copy is whole
// (".NAME.restoring.lshdb-backup.tmp"); "" when there is none.
func restoreCopyOf(fsys vfs.FS, real string) string {
	tmp := backupTempOf(fsys, real+restoreStaging)
	if fi, err := fsys.Stat(tmp); err != nil || !fi.IsDir() {
		return ""
	}
	return tmp
}

// errNoSize is targetFree's error for a filesystem that reports no size:
// its free space says nothing.
var errNoSize = errors.New("lshdb: the filesystem reports no size")

// targetFree returns the bytes free for a backup or a restore on dir's
// filesystem, or errNoSize for a filesystem of no size (procfs, sysfs,
// some FUSE mounts), which is not a full disk: its writes fail as they
// do (an embedder's review, EM-2: /proc "had 0 bytes free"; a
// read-through's RT2-2: the check of a copy of the files missed it).
func targetFree(fsys vfs.FS, dir string) (int64, error) {
	u, err := fsys.GetDiskUsage(dir)
	if err == nil && u.TotalBytes == 0 {
		return 0, errNoSize
	}
	return int64(u.AvailBytes), err
}

// onOtherDevice is otherDevice, and backupTargetFree the free bytes of a
// backup's (or a restore's) filesystem (variables for the tests, which have no second
// filesystem to fill).
var (
	onOtherDevice    = otherDevice
	backupTargetFree = func(dir string) (int64, error) { return targetFree(vfs.Default, dir) }
)

// finishBackup stamps the complete copy in tmp (stampBackup), verifies
// it when asked (verifyBackup) and renames it to dir; tmp is removed
// when any of them fails (a damaged copy is moved aside).
func (db *DB) finishBackup(ctx context.Context, tmp, dir string, verify bool) error {
	if err := db.stampBackup(tmp); err != nil {
		db.opts.FS.RemoveAll(tmp)
		return err
	}
	if verify {
		if err := db.verifyBackup(ctx, tmp, dir); err != nil {
			return err
		}
	}
	return renameBackup(db.opts.FS, tmp, dir)
}

// backupCopiedHook, when set (by tests), is called with the copy's
// temporary directory once the copy is complete, before it is stamped.
var backupCopiedHook func(tmp string)

// backupVerifyHook, when set (by tests), is called with the copy's
// temporary directory before BackupOptions.Verify checks it.
var backupVerifyHook func(tmp string)

// verifyBackup checks the complete copy in tmp (BackupOptions.Verify),
// which is to be renamed to dir. A copy found damaged is moved to
// dir.damaged (or dir.damaged-N) and the error, ErrCorrupt, names it;
// on any other failure (ctx, a read error) tmp is removed.
func (db *DB) verifyBackup(ctx context.Context, tmp, dir string) error {
	fsys := db.opts.FS
	if backupVerifyHook != nil {
		backupVerifyHook(tmp)
	}
	damaged := func(err error) error {
		to, merr := moveAside(fsys, tmp, dir+".damaged")
		switch {
		case merr != nil && to == "":
			fsys.RemoveAll(tmp)
			return fmt.Errorf("%w (the copy is removed: moving it aside failed: %w)", err, merr)
		case merr != nil:
			return fmt.Errorf("%w: the copy is at %s, not %s (its new name may not survive a crash: %w)", err, to, dir, merr)
		}
		return fmt.Errorf("%w: the copy is at %s, not %s", err, to, dir)
	}
	// NB: Pebble's messages of damage name the temporary directory, which
	// the error then replaces with where the copy went.
	cp, err := Open(tmp, &Options{ReadOnly: true, MustExist: true, ExpirySweep: -1, Logger: db.opts.Logger, fs: db.opts.fs, clock: db.opts.clock})
	if err != nil {
		err = fmt.Errorf("lshdb: backup: verifying the copy: it does not open: %w", err)
		if errors.Is(err, ErrCorrupt) {
			return damaged(err)
		}
		fsys.RemoveAll(tmp)
		return err
	}
	rep, err := cp.Check(ctx)
	if cerr := cp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case err != nil && ctx != nil && ctx.Err() != nil:
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: the verification of the copy stopped, and the copy is removed: %w", ctxErr(ctx))
	case err != nil && errors.Is(err, ErrCorrupt):
		return damaged(fmt.Errorf("lshdb: backup: the copy is damaged (so, most likely, is the index): %w", err))
	case err != nil:
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: verifying the copy: %w", err)
	case !rep.OK():
		n := max(rep.ProblemCount, len(rep.Problems))
		what := "problems"
		if n == 1 {
			what = "problem"
		}
		return damaged(fmt.Errorf("%w: the backup's copy fails its check, %d %s (the first: %s): so, most likely, does the index", ErrCorrupt, n, what, rep.Problems[0]))
	}
	return nil
}

// moveAside renames dir to to, or to to-N for the first N free, syncs
// their parent, and returns the new name.
func moveAside(fsys vfs.FS, dir, to string) (string, error) {
	for n := 1; n < 1000; n++ {
		name := to
		if n > 1 {
			name = fmt.Sprintf("%s-%d", to, n)
		}
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := fsys.Rename(dir, name); err != nil {
			return "", err
		}
		return name, syncDir(fsys, fsys.PathDir(name))
	}
	return "", fmt.Errorf("%s and %s-2 to -999 all exist", to, to)
}

// stampBackup gives the copy in dir (a Pebble store, closed) an instance
// of its own and names the original and the state it copied as its
// Origin (codec.Manifest): a backup and its original, once written
// apart, are two indexes, and a pairs file of one is not taken on the
// other; until the backup is written, what was derived from the original
// in the copied state holds for it.
//
// NB: the stamp is a file of its own (codec.BackupStampFile), synced,
// which the first Open that may write folds into the manifest record
// (foldBackupStamp); every Open reads it. The copy is only read here, by
// a read-only Pebble, which replays the copied log in memory: a writable
// one flushed it, and one failed write of the copy's Pebble MANIFEST in
// that flush ended the process that served the index (a fault-injection
// review's FI-1, on a failing backup disk).
func (db *DB) stampBackup(dir string) error {
	p, err := pebble.Open(dir, &pebble.Options{FS: db.opts.FS, Merger: compaction.Merger,
		FormatMajorVersion: formatMajorVersion, Logger: pebbleLogger{db.opts.Logger}, ReadOnly: true,
		EventListener: &pebble.EventListener{DataCorruption: dataCorruption(db.opts.Logger)}})
	if err != nil {
		return classify(fmt.Errorf("lshdb: backup: opening the copy: %w", err))
	}
	c, record, err := copiedState(p)
	if cerr := p.Close(); err == nil && cerr != nil {
		err = classify(fmt.Errorf("lshdb: backup: closing the copy: %w", cerr))
	}
	if err != nil {
		return err
	}
	enc, err := codec.EncodeBackupStamp(&codec.BackupStamp{Instance: newInstance(), Origin: db.man.Instance,
		OriginWritten: max(c.NextDoc, 1) - 1, OriginDocs: c.Live, For: record.Instance})
	if err != nil {
		return err
	}
	// NB: the directory is synced before the copy takes its name
	// (renameBackup).
	if err := writeSynced(db.opts.FS, db.opts.FS.PathJoin(dir, codec.BackupStampFile), enc); err != nil {
		return classify(fmt.Errorf("lshdb: backup: writing the copy's stamp: %w", err))
	}
	return nil
}

// copiedState reads the counters of the copy p (the original's at the
// instant of the copy) and its manifest record (which, in a copy of a
// backup not yet written, holds that backup's original's instance).
func copiedState(p *pebble.DB) (codec.Counters, *codec.Manifest, error) {
	get := func(key []byte, what string) ([]byte, error) {
		v, closer, err := p.Get(key)
		if err != nil {
			return nil, classify(fmt.Errorf("lshdb: backup: reading the copy's %s: %w", what, err))
		}
		defer closer.Close()
		return bytes.Clone(v), nil
	}
	cv, err := get(codec.CountersKey, "counters")
	if err != nil {
		return codec.Counters{}, nil, err
	}
	c, err := codec.DecodeCounters(cv)
	if err != nil {
		return codec.Counters{}, nil, classify(err)
	}
	mv, err := get(codec.ManifestKey, "manifest")
	if err != nil {
		return codec.Counters{}, nil, err
	}
	m, err := codec.DecodeManifest(mv)
	return c, m, classify(err)
}

// foldBackupStamp applies the stamp file a backup's copy may hold
// (stampBackup) to the handle's manifest and, in a handle that may
// write, writes the manifest so stamped (synced) and removes the file.
// A stamp already folded in (an Open killed before it removed the file)
// is only removed.
func (db *DB) foldBackupStamp() error {
	fsys := db.opts.FS
	path := fsys.PathJoin(db.dir, codec.BackupStampFile)
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return classify(fmt.Errorf("lshdb: reading the backup's stamp %s: %w", path, err))
	}
	v, err := io.ReadAll(io.LimitReader(f, 1<<16))
	f.Close()
	if err != nil {
		return classify(fmt.Errorf("lshdb: reading the backup's stamp %s: %w", path, err))
	}
	s, err := codec.DecodeBackupStamp(v)
	wrote := "" // what the manifest to write takes in, if any
	switch {
	case err != nil && db.opts.ReadOnly:
		// NB: the advice was to remove the file, and a backup never
		// opened writable then opened with its original's instance: the
		// collision the stamp is there to prevent, pairs files being
		// matched by instance (a read-through, RT9-3).
		return fmt.Errorf("%w (%s: a backup's stamp, which gives the backup an instance of its own; it holds no document: open the index once to write, with lshdb check --repair, and it takes a new instance of its own, with no origin; do not remove the file, or the index may open with its original's instance)%w", classify(err), path, unsaid{errAdvised})
	case err != nil:
		// NB: an instance of its own and no origin is always safe: no
		// pairs file or other state derived from another index is taken
		// for it. What the stamp said is lost with it (which index it
		// copies, and at what state).
		db.opts.Logger.Warn("lshdb: the index's backup stamp is damaged: the index takes a new instance of its own, with no origin (pairs files made on it before are not taken: make them again)", "file", path, "err", err)
		db.man.Instance, db.man.Origin = newInstance(), ""
		db.man.OriginWritten, db.man.OriginDocs, db.man.OriginInstant = 0, 0, false
		wrote = "a new instance in place of a damaged backup stamp"
	case s.Applied(&db.man):
		// NB: folded in by an Open killed before it removed the file.
	case !s.MadeFor(&db.man):
		// NB: a stamp made for another manifest than this one: a build
		// before stamp files copied a backup's, stamp and all, into an
		// index of another instance (its restore of a read-only
		// backup), and applied, the two indexes had one instance (a
		// read-through, RT9-2). Not taken.
		db.opts.Logger.Warn("lshdb: the index holds a backup's stamp made for another index (copied with its files by an earlier lshdb?): not taken, and removed by a writable open", "file", path, "index_instance", db.man.Instance, "stamp_for", s.For)
	default:
		s.Apply(&db.man)
		wrote = "the backup's stamp"
	}
	if db.opts.ReadOnly {
		return nil
	}
	if wrote != "" {
		enc, err := codec.EncodeManifest(&db.man)
		if err != nil {
			return err
		}
		if err := db.pebbleWrite(func() error { return db.pdb.Set(codec.ManifestKey, enc, pebble.Sync) }); err != nil {
			return fmt.Errorf("lshdb: writing %s into the manifest: %w", wrote, err)
		}
	}
	if err := fsys.Remove(path); err != nil {
		return classify(fmt.Errorf("lshdb: removing the backup's stamp %s: %w", path, err))
	}
	return syncDir(fsys, db.dir)
}

// renameBackup renames the complete copy tmp to dir and syncs their
// parent, removing tmp when it fails.
func renameBackup(fsys vfs.FS, tmp, dir string) error {
	if err := syncDir(fsys, tmp); err != nil {
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	// NB: a rename replaces an empty directory: one made since the
	// backup began (by another process) is not taken.
	if _, err := fsys.Stat(dir); err == nil {
		fsys.RemoveAll(tmp)
		return fmt.Errorf("%w: backup directory %s was made while the backup ran: %w", ErrInvalidOptions, dir, fs.ErrExist)
	}
	if err := fsys.Rename(tmp, dir); err != nil {
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	if err := syncDir(fsys, fsys.PathDir(dir)); err != nil {
		fsys.RemoveAll(dir) // NB: its name may not last a crash
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	return nil
}

// checkBackupDir refuses a backup directory that is empty or exists.
func (db *DB) checkBackupDir(dir string) error {
	if dir == "" {
		return invalid("backup directory is empty")
	}
	// NB: a symbolic link to nothing, as the directory or the nearest of
	// its parents that is there, reads as absent to Stat: the backup ran
	// its whole copy and then failed to rename onto it (or to make its
	// parents), an internal error where the directory was the mistake.
	if db.opts.FS == vfs.Default {
		for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
			fi, err := os.Lstat(p)
			if err == nil {
				if _, serr := os.Stat(p); fi.Mode()&fs.ModeSymlink != 0 && serr != nil {
					return fmt.Errorf("%w: backup directory %s: %s is a symbolic link to nothing: %w", ErrInvalidOptions, dir, p, serr)
				}
				break
			}
			if filepath.Dir(p) == p {
				break
			}
		}
	}
	if _, err := db.opts.FS.Stat(dir); err == nil {
		// NB: fs.ErrExist matches, unsaid: "… (a backup makes a new
		// directory): file already exists" said it twice.
		return fmt.Errorf("%w: backup directory %s exists: a backup makes a new directory%w", ErrInvalidOptions, dir, unsaid{fs.ErrExist})
	} else if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: backup directory %s: %w", ErrInvalidOptions, dir, err)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lshdb: backup directory %s: %w", dir, err)
	}
	// NB: a copy inside the index would live among the files it copies
	// (a later backup would copy it again, Drop would delete it with the
	// index).
	if db.rkv == nil && db.opts.FS == vfs.Default && fspath.Within(dir, db.dir) {
		return fmt.Errorf("%w: backup directory %s is inside the index it copies (%s): write it elsewhere", ErrInvalidOptions, dir, db.dir)
	}
	return nil
}

// copyFiles is Backup of a read-only handle: a copy of the store's files
// (not the lock, the socket, or lshdb's temporary directories), made in a
// directory beside dir, each file synced, then renamed to dir.
func (db *DB) copyFiles(ctx context.Context, dir string, verify bool) (err error) {
	fsys := db.opts.FS
	parent := fsys.PathDir(dir)
	if err := fsys.MkdirAll(parent, 0o755); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%w: backup directory %s: %w", ErrInvalidOptions, dir, err)
		}
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	// NB: a copy that does not fit is refused before it starts: the usual
	// reason to copy a read-only handle is a disk too full to open the
	// index for writing, often the disk the copy goes to.
	// NB: lshdb's temporary directories are not copied.
	if need := db.storeBytes(); need > 0 {
		if free, err := targetFree(fsys, parent); err == nil && free < need+need/64 {
			return fmt.Errorf("%w: backup: %s has %s free, and the copy of %s needs %s", ErrDiskFull, parent, mib(free), db.dir, mib(need))
		}
		// NB: on the index's own disk, the copy leaves the index its
		// reserve, as the README says: it took the disk below it (to
		// 4.6 MiB of 64), and the index's next writable open was
		// refused (a crash-safety review).
		// (A filesystem of the tests' is one disk; where the system
		// cannot tell, sameDevice says no: not on Windows.)
		if fsys != vfs.Default || sameDevice(parent, db.dir) {
			if err := roomIn(fsys, parent, db.opts.DiskReserve, need+need/64); err != nil {
				return fmt.Errorf("lshdb: backup: the copy of %s goes to the index's own disk: %w", db.dir, err)
			}
		}
	}
	tmp, release, err := db.backupTemp(dir)
	if err != nil {
		return err
	}
	defer release()
	if err := fsys.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	defer func() {
		if err != nil {
			fsys.RemoveAll(tmp)
		}
	}()
	if err := db.keepDirMode(tmp); err != nil {
		return err
	}
	names, err := fsys.List(db.dir)
	if err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	for _, n := range names {
		if ctx != nil && ctx.Err() != nil {
			return ctxErr(ctx)
		}
		src := fsys.PathJoin(db.dir, n)
		fi, err := fsys.Stat(src)
		if err != nil {
			return fmt.Errorf("lshdb: backup: %w", err)
		}
		if fi.IsDir() || !fi.Mode().IsRegular() || n == "LOCK" {
			continue // NB: lshdb's temporary directories, the socket, the lock
		}
		if err := copyFile(fsys, src, fsys.PathJoin(tmp, n)); err != nil {
			return fmt.Errorf("lshdb: backup: copying %s: %w", n, err)
		}
	}
	return db.finishBackup(ctx, tmp, dir, verify)
}

// copyFile copies src to dst, a new file, and syncs it.
func copyFile(fsys vfs.FS, src, dst string) error {
	return copyPrefix(fsys, src, dst, math.MaxInt64)
}

// copyPrefix copies the first n bytes of file src (all of a shorter one)
// to a new file dst, synced.
func copyPrefix(fsys vfs.FS, src, dst string, n int64) error {
	in, err := fsys.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, n)); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir syncs directory dir (the names in it).
func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// unsaid wraps an error that errors.Is should match, but that a message
// already says in its own words.
type unsaid struct{ err error }

func (u unsaid) Error() string { return "" }
func (u unsaid) Unwrap() error { return u.err }
