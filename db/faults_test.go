package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// failOnce wraps fs in one that fails, once armed, the first operation
// match accepts, with err.
func failOnce(fs vfs.FS, match func(op errorfs.Op) bool, err error) (vfs.FS, *atomic.Bool) {
	var armed, fired atomic.Bool
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && match(op) && fired.CompareAndSwap(false, true) {
			return err
		}
		return nil
	})), &armed
}

// faultText is a document's text of some 40 words, distinct by i.
func faultText(i int) string {
	var b strings.Builder
	for w := range 40 {
		fmt.Fprintf(&b, "word%d-%d ", (i*31+w*7)%997, w)
	}
	return b.String()
}

// putSome puts n synced documents and returns them by id: the oracle of
// what was acknowledged.
func putSome(t *testing.T, d *DB, prefix string, n int) map[string]string {
	t.Helper()
	acked := map[string]string{}
	for i := range n {
		id, text := fmt.Sprint(prefix, i), faultText(i)
		if err := d.Put(Doc{ID: id, Text: text}, nil); err != nil {
			t.Fatal(err)
		}
		acked[id] = text
	}
	return acked
}

// reopenHolds opens a copy of the index in mem (Pebble's lock stays with
// the stopped store's files, as another process finds them) and checks
// that it passes Check and holds exactly the acknowledged documents.
func reopenHolds(t *testing.T, mem vfs.FS, acked map[string]string) {
	t.Helper()
	cp := vfs.NewMem()
	if _, err := vfs.Clone(mem, cp, "idx", "idx"); err != nil {
		t.Fatal(err)
	}
	d, err := Open("idx", &Options{fs: cp, MustExist: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer d.Close()
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after the reopen: %+v, %v", rep, err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(acked)) {
		t.Errorf("reopened: %d documents (%v), want the %d acknowledged", n, err, len(acked))
	}
	for id, text := range acked {
		if doc, err := d.Get(id); err != nil || doc.Text != text {
			t.Errorf("acknowledged %s after the reopen: %v", id, err)
		}
	}
}

// Ensure that one I/O error on a synced write's log write stops the store
// with ErrStopped, not ErrCorrupt, which says stored bytes are damaged
// (nothing is: a fault-injection review's FI-4); that reads go on, later
// writes get the same error at once, Close returns it, and an Open again
// in this process says that only a new process opens the index (it said
// "Close it first" of a handle closed: FI-6); and that a new open keeps
// every acknowledged write.
func TestLogIOErrorStopsTheStore(t *testing.T) {
	mem := vfs.NewMem()
	fs, armed := failOnce(mem, func(op errorfs.Op) bool {
		return op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log")
	}, syscall.EIO)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := Open("idx", &Options{fs: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	acked := putSome(t, d, "a", 5)
	armed.Store(true)
	err = d.Put(Doc{ID: "b", Text: faultText(99)}, nil)
	if !errors.Is(err, ErrStopped) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrDiskFull) {
		t.Fatalf("the Put whose log write failed: %v; want ErrStopped, not ErrCorrupt or ErrDiskFull", err)
	}
	if err := d.Put(Doc{ID: "c", Text: faultText(98)}, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("the next Put: %v, want ErrStopped", err)
	}
	if err := d.RoomToWrite(); !errors.Is(err, ErrStopped) {
		t.Fatalf("RoomToWrite: %v, want ErrStopped (a server's /healthz says stopped by it)", err)
	}
	if doc, err := d.Get("a0"); err != nil || doc.Text != acked["a0"] {
		t.Fatalf("a read of the stopped store: %+v, %v", doc, err)
	}
	within(t, "Close", d.Close, ErrStopped)
	_, err = Open("idx", &Options{fs: fs, Logger: quiet})
	if !errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "Close it first") || !strings.Contains(err.Error(), "new process") {
		t.Fatalf("an Open again in this process: %v; want ErrLocked saying a new process opens it", err)
	}
	// NB: "b" may or may not be there (its log write failed part way):
	// the oracle is what was acknowledged, and b is looked for apart.
	cp := vfs.NewMem()
	if _, err := vfs.Clone(mem, cp, "idx", "idx"); err != nil {
		t.Fatal(err)
	}
	d2, err := Open("idx", &Options{fs: cp, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Get("b"); err == nil {
		acked["b"] = faultText(99)
	}
	d2.Close()
	reopenHolds(t, mem, acked)
}

// Ensure that Load, Upgrade and Compact, which call Pebble outside the
// writes' path, turn Pebble's panic at a failed write into ErrStopped:
// Load's ingest whose manifest write failed panicked out of Load, and the
// handle's next write and Close hung for ever; Compact's flush whose next
// log could not be made panicked out of Compact (a fault-injection
// review's FI-3). After each, writes are refused at once, Close returns,
// and a new open holds what was acknowledged, and nothing of the load.
func TestFailedIngestOrFlushStopsTheStore(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name  string
		match func(op errorfs.Op) bool
		run   func(d *DB) error
	}{
		{"load", func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, "MANIFEST") && strings.Contains(string(debug.Stack()), "ingestApply")
		}, func(d *DB) error {
			docs := make([]Doc, 300)
			for i := range docs {
				docs[i] = Doc{ID: fmt.Sprint("l", i), Text: faultText(1000 + i)}
			}
			_, err := d.Load(context.Background(), seqOf(docs), nil)
			return err
		}},
		{"compact", func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".log")
		}, func(d *DB) error { return d.Compact(context.Background()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fs, armed := failOnce(mem, c.match, syscall.EIO)
			d, err := Open("idx", &Options{fs: fs, Logger: quiet, PurgeEvery: -1})
			if err != nil {
				t.Fatal(err)
			}
			acked := putSome(t, d, "d", 20)
			if c.name == "load" {
				// NB: reopened with an empty memtable, so that the ingest
				// applies its tables at once, writing the manifest.
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				if d, err = Open("idx", &Options{fs: fs, Logger: quiet, PurgeEvery: -1}); err != nil {
					t.Fatal(err)
				}
			}
			armed.Store(true)
			err = within(t, c.name, func() error { return c.run(d) }, ErrStopped)
			if !errors.Is(err, ErrStopped) || strings.Count(err.Error(), "lshdb: ") != 1 {
				t.Fatalf("%s with a failed write: %v, want ErrStopped, said once", c.name, err)
			}
			within(t, "a Put after it", func() error { return d.Put(Doc{ID: "after", Text: faultText(7)}, nil) }, ErrStopped)
			within(t, "Close", d.Close, ErrStopped)
			reopenHolds(t, mem, acked)
		})
	}
}

// Ensure that Load's own I/O errors (its temporary files') say they are
// the load's: one came back bare, "input/output error" (FI-7); and that
// the index is as it was.
func TestLoadIOErrorIsSaidAsTheLoads(t *testing.T) {
	mem := vfs.NewMem()
	fs, armed := failOnce(mem, func(op errorfs.Op) bool {
		return op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, loadTmpDir)
	}, syscall.EIO)
	d := mustOpen(t, "idx", &Options{fs: fs})
	acked := putSome(t, d, "d", 5)
	docs := make([]Doc, 300)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprint("l", i), Text: faultText(1000 + i)}
	}
	armed.Store(true)
	_, err := d.Load(context.Background(), seqOf(docs), nil)
	if !errors.Is(err, syscall.EIO) || !strings.HasPrefix(err.Error(), "lshdb: load: ") {
		t.Fatalf("Load with a temporary file's write failed: %q, want an EIO said as the load's", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	reopenHolds(t, mem, acked)
}

// Ensure that an Upgrade whose ingest fails where Pebble panics (its
// manifest write) returns ErrStopped, said once, where the panic came out
// of Upgrade (FI-3), and leaves the index wholly old: a copy of its files
// is still format 1 (ErrFormat), and upgrades on a healthy filesystem.
func TestFailedUpgradeIngestStopsTheStore(t *testing.T) {
	dir := copyGolden(t, "format1/text")
	fs, armed := failOnce(vfs.Default, func(op errorfs.Op) bool {
		return op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, "MANIFEST") && strings.Contains(string(debug.Stack()), "ingestApply")
	}, syscall.EIO)
	armed.Store(true)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	err := within(t, "Upgrade", func() error {
		_, err := Upgrade(context.Background(), dir, &Options{fs: fs, Logger: quiet})
		return err
	}, ErrStopped)
	if !errors.Is(err, ErrStopped) || strings.Count(err.Error(), "lshdb: ") != 1 {
		t.Fatalf("Upgrade whose ingest failed: %v, want ErrStopped, said once", err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cp, &Options{Logger: quiet}); !errors.Is(err, ErrFormat) {
		t.Fatalf("the index after the failed upgrade: %v, want still format 1 (ErrFormat)", err)
	}
	if rep, err := Upgrade(context.Background(), cp, &Options{Logger: quiet}); err != nil || rep.Docs == 0 {
		t.Fatalf("a healthy upgrade after it: %+v, %v", rep, err)
	}
}

// Ensure that an Upgrade whose Open fails on one I/O error (the rename of
// Pebble's new OPTIONS file) returns it and ends nothing: a compaction
// that Pebble's Open of the format 1 index had begun went on in a
// torn-down file cache, and Pebble v2.1.7 ended the process there
// (integer divide by zero: a fault-injection review's FI-5); an Upgrade's
// handle now begins none. In a child process, which the failure ended;
// the index is still format 1 after it, and upgrades on a healthy
// filesystem.
func TestUpgradeOpenFailureEndsNothing(t *testing.T) {
	if dir := os.Getenv("LSHDB_UPGRADE_FAULT_DIR"); dir != "" {
		fs, armed := failOnce(vfs.Default, func(op errorfs.Op) bool {
			return op.Kind == errorfs.OpRename && strings.Contains(op.Path, "temporary")
		}, syscall.EIO)
		armed.Store(true)
		_, err := Upgrade(context.Background(), dir, &Options{fs: fs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("Upgrade whose Open failed: %v, want its EIO", err)
		}
		time.Sleep(2 * time.Second) // NB: what a compaction begun would do, it did within this
		fmt.Println("child lived")
		return
	}
	dir := copyGolden(t, "format1/text")
	childLived(t, "an Upgrade whose Open failed", "LSHDB_UPGRADE_FAULT_DIR="+dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := Open(dir, &Options{Logger: quiet}); !errors.Is(err, ErrFormat) {
		t.Fatalf("the index after the failed upgrade: %v, want still format 1 (ErrFormat)", err)
	}
	if rep, err := Upgrade(context.Background(), dir, &Options{Logger: quiet}); err != nil || rep.Docs == 0 {
		t.Fatalf("a healthy upgrade after it: %+v, %v", rep, err)
	}
}

// Ensure that one I/O error on a write of the Pebble MANIFEST in a
// backup's copy, once the copy is made, ends nothing: the copy's stamp
// opened it writable, the replay of the copied log flushed a table, and
// Pebble ended the process at the failed MANIFEST write of that flush (a
// fault-injection review's FI-1: a failing backup disk took down the
// process that served the index). The backup runs in a child process,
// which must live; the oracle is the backup opened afterwards: it passes
// Check, holds every acknowledged document, and is an index of its own
// whose origin is the original.
func TestBackupTargetFaultEndsNothing(t *testing.T) {
	if root := os.Getenv("LSHDB_BACKUP_FAULT_DIR"); root != "" {
		fs, armed := failOnce(vfs.Default, func(op errorfs.Op) bool {
			return strings.Contains(op.Path, ".lshdb-backup.tmp") && strings.Contains(op.Path, "MANIFEST") &&
				(op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt || op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpCreate)
		}, syscall.EIO)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		d, err := Open(filepath.Join(root, "idx"), &Options{fs: fs, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		putSome(t, d, "doc", 50) // NB: in the log only: the copy's replay has them to flush
		backupCopiedHook = func(string) { armed.Store(true) }
		defer func() { backupCopiedHook = nil }()
		if err := d.Backup(context.Background(), filepath.Join(root, "bk")); err != nil {
			t.Fatalf("Backup: %v", err)
		}
		fmt.Println("child lived, instance", d.Instance())
		return
	}
	root := t.TempDir()
	_, instance, _ := strings.Cut(childLived(t, "a backup whose copy's MANIFEST write failed", "LSHDB_BACKUP_FAULT_DIR="+root), "child lived, instance ")
	instance, _, _ = strings.Cut(instance, "\n")
	bk := mustOpen(t, filepath.Join(root, "bk"), &Options{MustExist: true})
	defer bk.Close()
	if rep, err := bk.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check of the backup: %+v, %v", rep, err)
	}
	if n, err := bk.Count(); err != nil || n != 50 {
		t.Errorf("the backup holds %d documents (%v), want the 50 acknowledged", n, err)
	}
	for i := range 50 {
		if doc, err := bk.Get(fmt.Sprint("doc", i)); err != nil || doc.Text != faultText(i) {
			t.Errorf("doc%d in the backup: %v", i, err)
		}
	}
	if info, err := bk.Info(); err != nil || info.Origin == nil || info.Origin.Instance != instance || bk.Instance() == instance {
		t.Errorf("the backup's instance %s and origin %+v (%v), want another than %s, which is its origin", bk.Instance(), info.Origin, err, instance)
	}
}

// childLived runs the calling test again in a child process, with env
// (KEY=VALUE) set, which the child's part of the test reads; what runs
// there is what. It fails the test unless the child exited 0 having
// printed "child lived", and returns the child's output.
func childLived(t *testing.T, what, env string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child lived") {
		t.Fatalf("the process of %s: %v\n%s", what, err, out)
	}
	return string(out)
}
