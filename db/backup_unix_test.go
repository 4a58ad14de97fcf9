//go:build unix

package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// holdOwner holds the lock on a backup's owner file at path that a live
// backup holds (claimOwner), until the returned function or the test's
// end.
func holdOwner(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(unlock)
	return unlock
}

// Ensure that a claim whose lock is taken on an owner file that a
// backup ending removed, after a third made a new one, is refused: the
// lock is no one's, and the third's backup runs (claimOwner's SameFile
// check). The oracle: the order of the steps, forced by a hook between
// the claim's open and its lock.
func TestClaimOwnerOfARemovedFile(t *testing.T) {
	owner := filepath.Join(t.TempDir(), ".x"+backupTempSuffix+backupOwnerSuffix)
	first, err := claimOwner(vfs.Default, owner, false)
	if err != nil {
		t.Fatal(err)
	}
	var third *ownerClaim
	ownerOpened = func() {
		ownerOpened = nil
		first.release() // the first backup ends: its file goes, then its lock
		var err error
		if third, err = claimOwner(vfs.Default, owner, false); err != nil {
			t.Errorf("a claim once the first had ended: %v", err)
		}
	}
	defer func() { ownerOpened = nil }()
	if c, err := claimOwner(vfs.Default, owner, false); !errors.Is(err, errOwnerBusy) {
		if c != nil {
			c.release()
		}
		t.Fatalf("a claim whose file was removed before its lock, beside a third's: %v, want errOwnerBusy", err)
	}
	if third == nil {
		t.Fatal("the third claim did not run")
	}
	third.release()
	if _, err := os.Stat(owner); !os.IsNotExist(err) {
		t.Fatalf("the owner file after the last release: %v", err)
	}
}

// Ensure that where the filesystem takes no lock (NFS without its lock
// daemon: ENOLCK), a backup goes on with the pid as the proof, as
// before locks: it completes and leaves no owner file, and one to a
// directory whose owner file names a process that runs is refused. The
// oracle: the copy's documents, the directory's files.
func TestBackupWhereNoLockIsTaken(t *testing.T) {
	lockOwnerHook = func(*os.File) error { return syscall.ENOLCK }
	defer func() { lockOwnerHook = nil }()
	d := mustOpen(t, filepath.Join(t.TempDir(), "src"), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document backed up without locks"}, nil); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dst := filepath.Join(parent, "copy")
	if err := d.Backup(context.Background(), dst); err != nil {
		t.Fatalf("a backup where no lock is taken: %v", err)
	}
	c := mustOpen(t, dst, &Options{ReadOnly: true})
	n, err := c.Count()
	c.Close()
	if err != nil || n != 1 {
		t.Fatalf("the copy holds %d documents (%v), want 1", n, err)
	}
	names, _ := os.ReadDir(parent)
	for _, e := range names {
		if e.Name() != "copy" {
			t.Errorf("left in the backup's directory: %s", e.Name())
		}
	}
	host, _ := os.Hostname()
	dst2 := filepath.Join(parent, "copy2")
	owner := filepath.Join(parent, ".copy2"+backupTempSuffix+backupOwnerSuffix)
	if err := os.WriteFile(owner, []byte(fmt.Sprintf("%d %s\n", os.Getppid(), host)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Backup(context.Background(), dst2); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "under way") {
		t.Fatalf("a backup beside a running one's owner file, no lock taken: %v, want ErrLocked", err)
	}
}

// Ensure that a backup to a filesystem of no size (Linux's /proc) fails
// with the system's error, not ErrDiskFull: it said /proc "has 0 bytes
// free" (an embedder's review, EM-2), which sends an operator to free
// space. The oracle is the filesystem's own report of its size.
func TestBackupToFilesystemOfNoSize(t *testing.T) {
	if u, err := vfs.Default.GetDiskUsage("/proc"); err != nil || u.TotalBytes != 0 {
		t.Skipf("no /proc of no size here (%+v, %v)", u, err)
	}
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document to back up somewhere it cannot go"}, nil); err != nil {
		t.Fatal(err)
	}
	err := d.Backup(context.Background(), "/proc/lshdb-backup-test")
	if err == nil || errors.Is(err, ErrDiskFull) {
		t.Fatalf("a backup into /proc: %v, want the system's error, not ErrDiskFull", err)
	}
	// NB: a read-only handle's backup copies the files (copyFiles), with
	// a check of its own (a read-through's RT2-2).
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	err = r.Backup(context.Background(), "/proc/lshdb-backup-test")
	if err == nil || errors.Is(err, ErrDiskFull) {
		t.Fatalf("a read-only handle's backup into /proc: %v, want the system's error, not ErrDiskFull", err)
	}
}

// Ensure that a symbolic link where a backup's owner file goes (its name
// is known beforehand: ".NAME.lshdb-backup.tmp.owner") is not followed:
// the backup is refused as ErrInvalidOptions naming the link, the file it
// names is not made, and once the link is gone the backup is made. It
// created the file the link named (an empty file of root's anywhere,
// from another user's link in /tmp), then refused every backup to that
// name as one under way (a security review, SEC2-7). The oracle: the
// link's target, absent, and the backup's documents.
func TestBackupOwnerLinkNotFollowed(t *testing.T) {
	root := t.TempDir()
	d := mustOpen(t, filepath.Join(root, "idx"), nil)
	acked := putSome(t, d, "doc", 5)
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "victim-made-by-the-backup")
	link := filepath.Join(shared, ".bk"+backupTempSuffix+backupOwnerSuffix)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	bk := filepath.Join(shared, "bk")
	err := d.Backup(context.Background(), bk)
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a backup whose owner file is a link: %v, want ErrInvalidOptions naming %s", err, link)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was made: %v", err)
	}
	if _, err := os.Stat(bk); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a backup was made: %v", err)
	}
	os.Remove(link)
	if err := d.Backup(context.Background(), bk); err != nil {
		t.Fatalf("the backup once the link is gone: %v", err)
	}
	b := mustOpen(t, bk, &Options{ReadOnly: true, MustExist: true})
	defer b.Close()
	for id, text := range acked {
		if doc, err := b.Get(id); err != nil || doc.Text != text {
			t.Errorf("%s in the backup: %v", id, err)
		}
	}
}
