package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/lshdb/lshdb/codec"
)

// Ensure that the calls that sync the log apart from a write (Sync,
// PutIfNewBatch's one sync at its end, and Backup's sync before its
// checkpoint), and a synced PutBatch, return ErrDiskFull when the log cannot be written, as a
// synced Put does, and at once once the store has stopped, and that
// Close then returns. They used Pebble's LogData(nil, Sync), which
// panicked on the failed write (ending the process) and hung on a
// stopped store, and Close behind it (a maintainer's review, C3-3). The
// oracle: a synced Put on the same failing log (ErrDiskFull), and no
// backup left behind.
func TestLogSyncsOnAFailingLog(t *testing.T) {
	calls := map[string]func(d *DB) error{
		"Sync": func(d *DB) error { return d.Sync() },
		"PutIfNewBatch": func(d *DB) error {
			_, err := d.PutIfNewBatch(context.Background(), []Doc{{ID: "new", Text: "a text like no other stored here at all"}}, nil)
			return err
		},
		"Backup": func(d *DB) error { return d.Backup(context.Background(), "bk") },
		// A batch that replaces a0: of none stored, none replaced (it
		// said one: Replaced was set before the sync).
		"PutBatch": func(d *DB) error {
			res, err := d.PutBatch([]Doc{{ID: "a0", Text: "a text that replaces the first document"}}, nil)
			if res.Stored != 0 || res.Replaced != 0 {
				return fmt.Errorf("result %+v with the error %v", res, err)
			}
			return err
		},
	}
	for name, call := range calls {
		for _, stopped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stopped=%v", name, stopped), func(t *testing.T) {
				mem := vfs.NewMem()
				fs, refuse := logWritesRefused(mem)
				quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
				d, err := Open("idx", &Options{fs: fs, Logger: quiet, DiskReserve: -1, MemTableSize: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				for i := range 5 {
					if err := d.Put(Doc{ID: fmt.Sprint("a", i), Text: fmt.Sprintf("document number %d with words enough %d", i, i*7919)}, &WriteOptions{NoSync: true}); err != nil {
						t.Fatal(err)
					}
				}
				refuse.On()
				if stopped {
					within(t, "a synced Put on the failing log", func() error {
						return d.Put(Doc{ID: "b", Text: "a synced document on a log that cannot be written"}, nil)
					}, ErrDiskFull)
					if d.damage.stopped.Load() == nil {
						t.Fatal("a synced Put on the failing log did not stop the store")
					}
				}
				within(t, name, func() error { return call(d) }, ErrDiskFull)
				if _, err := mem.Stat("bk"); !errors.Is(err, iofs.ErrNotExist) && name == "Backup" {
					t.Errorf("a failed backup left bk: %v", err)
				}
				within(t, "Close of the stopped store", d.Close, ErrDiskFull)
			})
		}
	}
}

// Ensure that a backup whose copy cannot be stamped (a target with room
// for links, not for a file: its stamp) fails with ErrDiskFull and leaves
// no copy: the stamp was a synced Set in the copy, which panicked (C3-3).
// The oracle: the index reads on, and a backup once there is room is
// whole.
func TestBackupStampOnAFullTarget(t *testing.T) {
	mem := vfs.NewMem()
	refuse := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) && !strings.HasPrefix(op.Path, "idx/") &&
			(strings.HasSuffix(op.Path, ".log") || strings.HasSuffix(op.Path, codec.BackupStampFile)) {
			if _, err := mem.Stat("idx/" + mem.PathBase(op.Path)); err != nil {
				return syscall.ENOSPC // a file the copy makes of its own
			}
		}
		return nil
	})}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := Open("idx", &Options{fs: errorfs.Wrap(mem, refuse), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "x", Text: "some document text here"}, nil); err != nil {
		t.Fatal(err)
	}
	refuse.On()
	within(t, "Backup", func() error { return d.Backup(context.Background(), "bk") }, ErrDiskFull)
	if names, _ := mem.List("."); strings.Contains(strings.Join(names, " "), "bk") {
		t.Errorf("a failed backup left %v", names)
	}
	refuse.Off()
	if err := d.Backup(context.Background(), "bk"); err != nil {
		t.Fatal(err)
	}
	b, err := Open("bk", &Options{fs: mem, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if doc, err := b.Get("x"); err != nil || doc.Text != "some document text here" {
		t.Errorf("the backup's x: %+v, %v", doc, err)
	}
}

// Ensure that a Load whose ingest succeeded returns its result, at once,
// when the flush after it cannot write (a disk filled meanwhile, the
// reserve off), and that Close then returns: Pebble's Flush, which only
// tidies there, waited for ever, Close behind it, and a failed one gave
// a zero result and an error for a load that was stored (a maintainer's
// review, C3-4). The oracle: the documents read back.
func TestLoadStoredWhenTheFlushAfterCannotWrite(t *testing.T) {
	var on atomic.Bool
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mem := vfs.NewMem()
	d, err := Open("idx", &Options{fs: enospcFS{FS: mem, on: &on, spare: loadTmpDir}, Logger: quiet, DiskReserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "m", Text: "a document in the memtable before the load"}, nil); err != nil {
		t.Fatal(err)
	}
	text := func(i int) string { return fmt.Sprintf("loaded document %d with some words %d", i, i*31) }
	seq := func(yield func(Doc, error) bool) {
		for i := range 50 {
			if !yield(Doc{ID: fmt.Sprint("l", i), Text: text(i)}, nil) {
				return
			}
		}
		on.Store(true) // the disk fills once the documents are read
	}
	var res LoadResult
	within(t, "Load", func() (err error) {
		res, err = d.Load(context.Background(), seq, nil)
		return err
	}, nil)
	if res.Stored != 50 {
		t.Errorf("Load = %+v; want its 50 stored", res)
	}
	for i := range 50 {
		if doc, err := d.Get(fmt.Sprint("l", i)); err != nil || doc.Text != text(i) {
			t.Fatalf("l%d: %+v, %v", i, doc, err)
		}
	}
	within(t, "Close", d.Close, nil)
	on.Store(false)
	d, err = Open("idx", &Options{fs: mem, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 51 {
		t.Errorf("reopened: %d documents, %v; want 51", n, err)
	}
}
