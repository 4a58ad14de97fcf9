package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/spf13/cobra"
)

// backupJSON is the output of backup --output json.
type backupJSON struct {
	DB   string `json:"db"`
	To   string `json:"to"`
	Docs uint64 `json:"docs"`
	// Via is "socket" when the index's owner (lshdb serve) made the copy.
	Via string `json:"via"`
	// Verified: the copy was checked before it got its name (--verify);
	// Copied: its files are its own, not links to the index's (--copy).
	Verified bool `json:"verified,omitempty"`
	Copied   bool `json:"copied,omitempty"`
}

// backupServing, when set (tests), runs once backup serves the index it
// opened, before it copies it.
var backupServing func()

func (a *app) backupCmd() *cobra.Command {
	var to string
	var copyAll, verify bool
	c := &cobra.Command{
		Use: "backup --db DIR --to NEWDIR",
		Example: `  # A consistent copy of an index, while it is in use
  lshdb backup --db idx --to idx-2026-11-23`,
		Short: "A consistent copy of an index into a new directory, also while it is served",
		Long: `A consistent copy of the index into NEWDIR, which must not exist (its parent
directory must: lshdb makes no directory for an output, so that a typo or a
volume not mounted is an error, not a copy on the index's own disk): the state
of one instant (Pebble's checkpoint: table files are hard-linked when NEWDIR is
on the same filesystem). The copy is an index of its own. When another process
owns the index (lshdb serve), the copy is made by that process, through the
index's socket. An index that cannot be opened for writing (a disk too full
for it, a read-only filesystem) is copied file by file under its lock. The copy
is opened afterwards and its documents counted.

On the same filesystem the copy's tables are the original's files (hard
links): it survives the index being deleted, overwritten or rebuilt, but not
damage to the bytes on disk, which both then share. --copy gives the copy
files of its own (the time and space of a full copy). --verify reads the
whole copy (lshdb check) and fails if any of it is damaged: a backup of a
damaged index is no backup. The copy is verified before it gets NEWDIR's name:
a damaged one is moved to NEWDIR.damaged instead, and a backup stopped while
it verifies (interrupted, killed) leaves nothing under NEWDIR, so that a copy
under NEWDIR is a verified one to a script that checks it exists.

Of an index on Redis (--db redis+cluster://…), the copy is a new Pebble index
in NEWDIR with the same parameters and every live document, each as it is when
read (a cluster has no snapshot): a local copy for safekeeping, or for a
nightly pairs run at the embedded index's speed.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.needDB(); err != nil {
				return err
			}
			if to == "" {
				return usagef("--to NEWDIR is required")
			}
			// NB: absolute, since the owner that may make the copy has its
			// own working directory.
			abs, err := filepath.Abs(to)
			if err != nil {
				return err
			}
			// NB: the copy goes into an existing directory, as every
			// other output does: `--to /mnt/backupp/idx` (a typo, or a
			// volume not mounted) made the whole missing path and put
			// the copy on the index's own disk, exit 0 (a bad-input
			// review, B15). The library's Backup still makes it, for
			// an embedder's dated directories.
			// The words are every output's (cannotWrite).
			if parent := filepath.Dir(abs); parent != abs {
				if fi, err := os.Stat(parent); err != nil {
					return fmt.Errorf("%w: nothing was copied", cannotWrite(abs, pathCause(err)))
				} else if !fi.IsDir() {
					return fmt.Errorf("%w: nothing was copied", cannotWrite(abs, fmt.Errorf("%s is not a directory", escControls(parent))))
				}
			}
			via := "open"
			// NB: writable (Pebble checkpoints a writable store: table
			// files hard-linked where they can be), and must exist: a
			// backup never creates its source. An index that cannot be
			// opened for writing (a full disk, a read-only filesystem) is
			// copied file by file through a read-only open.
			// NB: an index locked by a process that does not serve it (a
			// command starting, or closing it) is retried for
			// handoverWait, and a serve that says it is stopping waited
			// for, as every other command does (openFresh): a backup
			// beside an insert failed at once in half of a review's runs,
			// telling the operator to kill the insert.
			held := newHeldWait()
			for {
				d, err := db.Open(a.dbDir, a.writeOptions(&db.Options{MustExist: true}))
				if errors.Is(err, db.ErrDiskFull) || errors.Is(err, syscall.EROFS) {
					d, err = db.Open(a.dbDir, &db.Options{MustExist: true, ReadOnly: true})
				}
				if err == nil {
					// NB: served while it copies, as every owner is: a
					// backup held the index for its whole verification
					// (a read of the copy, as long as a check), and every
					// writer meanwhile was refused, told that a backup
					// "does not serve it" (an operator's review).
					stop := a.serveOwnedOutput(d, false)
					if backupServing != nil {
						backupServing()
					}
					ctx, barDone := a.phaseBar("backup")
					err = d.BackupWith(ctx, abs, db.BackupOptions{Copy: copyAll, Verify: verify})
					barDone()
					stop()
					if cerr := d.Close(); err == nil {
						err = cerr
					}
				} else if errors.Is(err, db.ErrLocked) {
					sock := httpapi.SocketPath(a.dbDir)
					cl, cerr := client.OpenContext(a.ctx, sock, clientOptions(a.ctx))
					switch {
					case errors.Is(cerr, client.ErrForeignSocket):
						return cerr // NB: not its process named as the owner
					case errors.Is(cerr, httpapi.ErrUnauthorized):
						// NB: the owner answered, refusing the token: said
						// as query says it. It read "nothing answers on its
						// socket", and advised the backup just run (an
						// operator's review).
						return fmt.Errorf("the process that owns %s serves it and refused this command: %w", a.dbDir, cerr)
					case a.ctx.Err() != nil:
						return fmt.Errorf("%w while waiting for the process that owns %s: nothing was copied%w", context.Cause(a.ctx), a.dbDir, silently{context.Canceled})
					case cerr != nil && errors.Is(cerr, context.DeadlineExceeded):
						return stuckOwner(err, a.dbDir, attachTimeout)
					case cerr != nil:
						if held.again(a) {
							continue
						}
						return fmt.Errorf("%w (and nothing answers on its socket %s: %w)", lockedHint(err, a.dbDir), sock, cerr)
					}
					via = "socket"
					err = cl.BackupWith(a.ctx, abs, db.BackupOptions{Copy: copyAll, Verify: verify})
					cl.Close()
				}
				if err != nil && errors.Is(err, db.ErrCorrupt) && verify {
					return fmt.Errorf("%w (lshdb check --db %s checks the index)", err, rediskv.Redact(a.dbDir))
				}
				if err != nil {
					return interruptNote(err, "backup interrupted")
				}
				break
			}
			cp, err := db.Open(abs, &db.Options{ReadOnly: true})
			if err != nil {
				return fmt.Errorf("the copy in %s does not open: %w", abs, err)
			}
			n, err := cp.Count()
			cp.Close()
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(backupJSON{DB: rediskv.Redact(a.dbDir), To: abs, Docs: n, Via: via, Verified: verify, Copied: copyAll && !db.IsRedisURL(a.dbDir)})
			}
			how := ""
			if via == "socket" {
				how = " (made by the index's owner, through its socket)"
			}
			if copyAll && !db.IsRedisURL(a.dbDir) {
				how += "; files copied, not linked"
			}
			if verify {
				how += "; verified"
			}
			err = a.summaryf("backed up %s to %s: %d documents%s\n", esc(rediskv.Redact(a.dbDir)), esc(abs), n, how)
			return err
		},
	}
	c.Flags().StringVar(&to, "to", "", "the new directory to copy the index into (must not exist)")
	c.Flags().BoolVar(&copyAll, "copy", false, "give the copy files of its own (on the same filesystem its tables are otherwise the index's, hard-linked)")
	c.Flags().BoolVar(&verify, "verify", false, "read the whole copy (as check does) before it gets NEWDIR's name, and fail if any of it is damaged")
	return c
}

// restoreJSON is the output of restore --output json.
type restoreJSON struct {
	DB   string `json:"db"`
	From string `json:"from"`
	Docs uint64 `json:"docs"`
	// Aside is where the index that was at --db went, or absent when
	// there was none.
	Aside    string `json:"aside,omitempty"`
	Verified bool   `json:"verified,omitempty"`
}

func (a *app) restoreCmd() *cobra.Command {
	var from string
	var verify bool
	c := &cobra.Command{
		Use: "restore --from COPY --db DIR",
		Example: `  # Put a backup in the place of a damaged index (stop lshdb serve first)
  lshdb restore --from idx-2026-11-23 --db idx --verify`,
		Short: "Put a copy of a backup in an index's place, keeping the index that was there aside",
		Long: `Put a copy of the index in COPY (a backup made by lshdb backup, or any index
this build reads) in DIR's place. COPY is read, not written: its files are
copied into DIR.restoring beside DIR, synced, and read whole first with
--verify (as check reads them: a damaged backup is refused, and DIR left as
it is). Only then is the index at DIR moved aside, to
DIR.before-restore-TIME (UTC), and the copy renamed to DIR. Nothing of the
old index is deleted: remove it once the restored index is known good.

DIR must not be in use: stop lshdb serve and any shell on it first (a
restore beside them exits 75, having done nothing). A DIR that does not
exist, or an empty directory, simply receives the copy; one holding other
files is refused. A symbolic link is followed: the index is replaced where
it is, and the link kept.

The restored index has an instance of its own and names the backup as its
origin (lshdb info): pairs files made before are refused on it (make them
again). A restore needs room for a whole copy of COPY beside DIR. One killed
while it copies leaves DIR as it was and a hidden temporary copy, which the
next restore removes; one killed after its copy, DIR as it was and
DIR.restoring, which the next restore names (remove it); one killed between
the renames (an instant), the old index aside and the copy at DIR.restoring:
rename that to DIR. DIR may not be a mount point (restore into a directory
inside it) nor the working directory.

Copying the backup's files over DIR by hand (cp -a COPY/. DIR) mixes the
two stores' files: either state may win without a word.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if a.shellDB != nil {
				return usagef("restore needs the index to itself: run it outside the shell")
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if from == "" {
				return usagef("--from COPY is required (the backup to restore)")
			}
			ctx, barDone := a.phaseBar("restore")
			rep, err := db.Restore(ctx, from, a.dbDir, &db.RestoreOptions{Verify: verify, DiskReserve: a.writeOptions(nil).DiskReserve})
			barDone()
			if errors.Is(err, db.ErrNotExist) {
				err = notTheIndex{err} // NB: the backup: a restore into no index makes one
			}
			if err != nil {
				return interruptNote(err, "restore interrupted: the index is as it was")
			}
			if a.json() {
				return a.emitJSON(restoreJSON{DB: a.dbDir, From: from, Docs: rep.Docs, Aside: rep.Aside, Verified: verify})
			}
			how := ""
			if verify {
				how = "; verified"
			}
			if err := a.summaryf("restored %s from %s: %d documents%s\n", esc(a.dbDir), esc(from), rep.Docs, how); err != nil {
				return err
			}
			if rep.Aside != "" {
				a.notef("the index that was there is now " + esc(rep.Aside) + ": remove it once the restored index is known good")
			}
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the backup to restore (a directory lshdb backup made, or any index)")
	c.Flags().BoolVar(&verify, "verify", false, "read the whole copy (as check does) before it takes the index's place, and fail if any of it is damaged")
	return c
}
