package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func equalState(got map[string][]uint64, want map[string]modelDoc) bool {
	return maps.EqualFunc(got, want, func(a []uint64, b modelDoc) bool { return slices.Equal(a, b.set) })
}

// Ensure that after a simulated crash at a random moment of a stream of
// writes (synced and unsynced), the recovered database is exactly the
// state after some prefix of the writes: every acknowledged synced write
// is there, no write is half there, and the database checks clean.
func TestCrash(t *testing.T) {
	trials := 40
	if testing.Short() {
		trials = 10
	}
	for trial := range trials {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(trial), 42))
			fs := vfs.NewCrashableMem()
			d := mustOpen(t, "db", &Options{fs: fs})
			m := newModel(t, d.Params())
			states := []map[string]modelDoc{{}} // states[i]: after i acknowledged writes
			synced := []bool{true}
			// opEnd[i]: the last state of the write that made state i (a
			// PutIfNewBatch makes one per document it stores)
			opEnd := []int{0}
			var acked atomic.Int64
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				wrng := rand.New(rand.NewPCG(uint64(trial), 43))
				for i := 0; i < 400 && !stop.Load(); i++ {
					var texts []string
					for _, doc := range m.docs {
						texts = append(texts, doc.text)
					}
					slices.Sort(texts)
					noSync := wrng.IntN(3) == 0
					wo := &WriteOptions{NoSync: noSync}
					id := fmt.Sprintf("doc-%d", wrng.IntN(40))
					var err error
					batchStates := 0 // PutIfNewBatch: states pushed for the documents it stored
					switch op := wrng.IntN(12); {
					case op < 6:
						text := randomText(wrng, texts)
						if _, err = d.PutBatch([]Doc{{ID: id, Text: text}}, wo); err == nil {
							m.docs[id] = m.doc(text)
						}
					case op < 8:
						docs := []Doc{{ID: id, Text: randomText(wrng, texts)}, {ID: fmt.Sprintf("doc-%d", wrng.IntN(40)), Text: randomText(wrng, texts)}}
						if _, err = d.PutBatch(docs, wo); err == nil {
							for _, doc := range docs {
								m.docs[doc.ID] = m.doc(doc.Text)
							}
						}
					case op >= 10:
						// NB: each document stored is a write of its own
						// (a crash may keep any first part of them); one
						// sync at the end covers them all.
						docs := []Doc{{ID: id, Text: randomText(wrng, texts)}, {ID: fmt.Sprintf("doc-%d", wrng.IntN(40)), Text: randomText(wrng, texts)}, {ID: fmt.Sprintf("doc-%d", wrng.IntN(40)), Text: randomText(wrng, texts)}}
						var res []IfNewResult
						if res, err = d.PutIfNewBatch(context.Background(), docs, wo); err == nil {
							for i, r := range res {
								if r.Match == nil && r.Err == nil {
									m.docs[docs[i].ID] = m.doc(docs[i].Text)
									states = append(states, m.clone())
									synced = append(synced, false)
									batchStates++
								}
							}
							if batchStates == 0 {
								continue
							}
							synced[len(synced)-1] = !noSync
							for range batchStates {
								opEnd = append(opEnd, len(states)-1)
							}
							acked.Add(int64(batchStates))
							continue
						}
					default:
						if _, ok := m.docs[id]; !ok {
							continue
						}
						if err = d.Delete(id, wo); err == nil {
							delete(m.docs, id)
						}
					}
					if err != nil {
						t.Errorf("write %d: %v", i, err)
						return
					}
					states = append(states, m.clone())
					synced = append(synced, !noSync)
					opEnd = append(opEnd, len(states)-1)
					acked.Add(1)
				}
			}()
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			before := int(acked.Load())
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
			after := int(acked.Load())
			stop.Store(true)
			wg.Wait()
			d.Close()

			lo := 0 // the last synced write acknowledged before the crash
			for i := before; i >= 0; i-- {
				if synced[i] {
					lo = i
					break
				}
			}
			// NB: the write in flight may have landed: each of its states
			// (a PutIfNewBatch's, up to its last).
			hi := min(after+1, len(states)-1)
			hi = opEnd[hi]
			r, err := Open("db", &Options{fs: crashed})
			if lde := (*LogDamageError)(nil); errors.As(err, &lde) {
				// NB: the crash kept a later block of the log's unsynced
				// writes and lost an earlier one (CrashClone keeps
				// unsynced data at random, as a disk may): refused, as
				// designed; accepting the loss opens what came before it,
				// every synced write among it.
				r, err = Open("db", &Options{fs: crashed, AcceptLogDamage: true})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := stateOf(t, r)
			found := -1
			for p := hi; p >= lo; p-- {
				if equalState(got, states[p]) {
					found = p
					break
				}
			}
			if found < 0 {
				t.Fatalf("recovered state (%d docs) matches no state between write %d (last synced before the crash) and %d", len(got), lo, hi)
			}
			t.Logf("crash after %d acknowledged writes (%d during the clone); recovered the state after write %d", before, after-before, found)
			rep, err := r.Check(context.Background())
			if err != nil || !rep.OK() {
				t.Fatalf("check after crash: %v %v", rep, err)
			}
			if n, _ := r.Count(); n != uint64(len(got)) {
				t.Fatalf("Count = %d, %d documents", n, len(got))
			}
			// The recovered database takes writes and they survive a reopen.
			if err := r.Put(Doc{ID: "after-crash", Text: "a document written after recovery"}, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Ensure that Sync makes a NoSync handle's acknowledged writes durable:
// after a crash that loses every unsynced byte, the documents written
// before Sync are all there, and (the control) those written after it
// are not.
func TestSyncMakesNoSyncWritesDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	d := mustOpen(t, "db", &Options{fs: fs, NoSync: true})
	defer d.Close()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := d.Put(Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document number %d of a sync test", i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 100)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	put(100, 150)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	r := mustOpen(t, "db", &Options{fs: crashed})
	defer r.Close()
	for i := range 150 {
		ok, err := r.Has(fmt.Sprintf("d%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i < 100) {
			t.Fatalf("after the crash, d%03d stored: %v (synced: %v)", i, ok, i < 100)
		}
	}
	ro := mustOpen(t, "ro", &Options{fs: vfs.NewMem()})
	ro.Close()
	ro = mustOpen(t, "ro", &Options{fs: ro.opts.FS, ReadOnly: true})
	defer ro.Close()
	if err := ro.Sync(); err != nil {
		t.Fatalf("Sync of a read-only handle: %v", err)
	}
}

// Ensure that a cleanly closed index does not depend on its write-ahead
// log: every acknowledged document is there after each log file is
// damaged in its middle. Before Close flushed, the writes since the last
// flush were in the log only: Pebble replays the newest log leniently
// (damage there reads as a crash's torn tail), so that, as the damage
// fell, they were dropped without an error (Open and Check said ok) or
// Open failed. The model: the ids acknowledged.
func TestCleanCloseSurvivesLogDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	for b := range 20 {
		batch := make([]Doc, 50)
		for i := range batch {
			id := fmt.Sprintf("d%d-%d", b, i)
			batch[i] = Doc{ID: id, Text: fmt.Sprintf("document %d of batch %d, with words enough to shingle", i, b)}
			acked = append(acked, id)
		}
		if _, err := d.PutBatch(batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, p := range logs {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := f.Stat(); fi.Size() > 64 {
			f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, fi.Size()/2)
		}
		f.Close()
	}
	d, err = Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	has, err := d.HasIDs(acked)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, ok := range has {
		if !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged documents lost to damage in the log of a cleanly closed index", lost, len(acked))
	}
}

// Ensure that damage a compaction meets in the background is kept for the
// handle's user (DB.Corruption, an ErrCorrupt naming the table): the
// writes that started it were acknowledged, and without it a command
// exited 0 beside a logged checksum error. The oracle: the damage written
// into a table by hand; an undamaged index, and a read that returns the
// damage itself, report none.
func TestCorruptionSeenInTheBackground(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 10 {
		batch := make([]Doc, 300)
		for i := range batch {
			batch[i] = Doc{ID: fmt.Sprintf("d%d-%d", b, i), Text: fmt.Sprintf("document %d of batch %d: %s", i, b, strings.Repeat(fmt.Sprintf("word%d ", i*7+b), 40))}
		}
		if _, err := d.PutBatch(batch, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Corruption(); err != nil {
		t.Fatalf("an undamaged index: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var biggest string
	var size int64
	for _, p := range tables {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			biggest, size = p, fi.Size()
		}
	}
	if size < 64<<10 {
		t.Fatalf("no table to damage: %v", tables)
	}
	f, err := os.OpenFile(biggest, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{0xde, 0xad}, 16), size/3)
	f.Close()
	// Small memtables, and new postings in the damaged table's key
	// range: the flushes fill level 0, and the compactions that follow
	// read the damaged table, in the background.
	d, err = Open(dir, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A read that meets the damage returns it: not noted.
	if rep, err := d.Check(context.Background()); err == nil && rep.OK() {
		t.Fatal("Check finds no damage in the damaged table")
	}
	if err := d.Corruption(); err != nil {
		t.Fatalf("a read's damage noted as the background's: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for b := 0; d.Corruption() == nil && time.Now().Before(deadline); b++ {
		batch := make([]Doc, 100)
		for i := range batch {
			batch[i] = Doc{ID: fmt.Sprintf("new-%d-%d", b, i), Text: fmt.Sprintf("document %d of batch %d: %s", i, b, strings.Repeat(fmt.Sprintf("word%d ", i*7+b), 40))}
		}
		if _, err := d.PutBatch(batch, &WriteOptions{NoSync: true}); err != nil {
			time.Sleep(10 * time.Millisecond) // NB: a write stalled or refused while compactions fail: the note is what is tested
		}
	}
	num := strings.TrimSuffix(filepath.Base(biggest), ".sst")
	if err := d.Corruption(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), num) {
		t.Errorf("after a compaction over a damaged table: %v, want ErrCorrupt naming %s", err, num)
	}
}

// Ensure that Close returns when the flush it starts (flushAtClose)
// cannot be written: Pebble retries a failed flush without end, and Close
// waited for it for ever. The tables' creation refused (a full disk, a
// quota that statfs does not show); the writes stay in the log, and read
// back after the disk takes writes again.
func TestCloseWithAFailingFlush(t *testing.T) {
	mem := vfs.NewMem()
	var refuse errorfs.Toggle
	refuse.Injector = errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") {
			return syscall.ENOSPC
		}
		return nil
	})
	fs := errorfs.Wrap(mem, &refuse)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := Open("idx", &Options{fs: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document whose flush the disk refuses"}, nil); err != nil {
		t.Fatal(err)
	}
	refuse.On()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case <-closed:
	case <-time.After(2 * time.Minute):
		t.Fatal("Close hangs on a flush that cannot be written")
	}
	refuse.Off()
	d, err = Open("idx", &Options{fs: fs, Logger: quiet, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if doc, err := d.Get("a"); err != nil || doc.Text != "a document whose flush the disk refuses" {
		t.Errorf("the write after the failed flush: %+v %v", doc, err)
	}
}

// logWritesRefused wraps mem in a filesystem whose write-ahead log
// writes fail with ENOSPC (a full disk) while refuse is on.
func logWritesRefused(mem vfs.FS) (vfs.FS, *errorfs.Toggle) {
	refuse := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) && strings.HasSuffix(op.Path, ".log") {
			return syscall.ENOSPC
		}
		return nil
	})}
	return errorfs.Wrap(mem, refuse), refuse
}

// TestWriteAheadLogFailureStopsTheStore: a write-ahead log write that
// fails (a full disk with DiskReserve off) made Pebble panic in the next
// commit, holding its commit pipeline's lock: a server recovered the
// panic, and every later write, and Close, hung (a data-safety review on
// a full tmpfs). Now that write returns ErrDiskFull, every later one too
// at once, reads go on, and Close returns; a new open (another process,
// here another filesystem handle on the same files: Pebble's lock stays
// with the stopped store) replays what was acknowledged. The oracle: the
// documents acknowledged, read back.
func TestWriteAheadLogFailureStopsTheStore(t *testing.T) {
	mem := vfs.NewMem()
	fs, refuse := logWritesRefused(mem)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := Open("idx", &Options{fs: fs, Logger: quiet, DiskReserve: -1, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	text := func(i int) string {
		return fmt.Sprintf("document number %d, with words enough for shingles: %d", i, i*7919)
	}
	// NB: Pebble panics when it rotates the memtable and cannot close the
	// log: until then each synced write fails on its own (ErrDiskFull).
	long := func(i int) string { return strings.Repeat(text(i)+" ", 1000) }
	acked := map[string]string{}
	for i := range 5 {
		id := fmt.Sprint("a", i)
		if err := d.Put(Doc{ID: id, Text: text(i)}, nil); err != nil {
			t.Fatal(err)
		}
		acked[id] = text(i)
	}
	refuse.On()
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			err := d.Put(Doc{ID: fmt.Sprint("b", i), Text: long(100 + i)}, nil)
			errs = append(errs, err)
			if len(errs) > 2 && strings.Contains(errs[len(errs)-3].Error(), "the store stopped") {
				break // and two after it
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("writes hang after a failed write-ahead log write")
	}
	for i, err := range errs {
		if !errors.Is(err, ErrDiskFull) {
			t.Fatalf("write %d after the log failed: %v, want ErrDiskFull", i, err)
		}
	}
	if len(errs) == 100 || !strings.Contains(errs[len(errs)-1].Error(), "the store stopped") {
		t.Fatalf("the last write: %v, want the stopped store said", errs[len(errs)-1])
	}
	for id, want := range acked {
		if doc, err := d.Get(id); err != nil || doc.Text != want {
			t.Errorf("Get(%s) on the stopped store: %+v %v", id, doc, err)
		}
	}
	// The other writes, which flush or go through the pipeline (a delete,
	// a compaction, a load), are refused too: they would wait for ever.
	others := make(chan []error, 1)
	go func() {
		_, derr := d.DeleteIDs([]string{"a0"}, nil)
		_, lerr := d.Load(context.Background(), func(yield func(Doc, error) bool) { yield(Doc{ID: "c", Text: text(200)}, nil) }, nil)
		others <- []error{derr, d.Compact(context.Background()), lerr}
	}()
	select {
	case errs := <-others:
		for i, err := range errs {
			if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "the store stopped") {
				t.Errorf("write %d of delete, compact, load on the stopped store: %v, want its error", i, err)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("a delete, a compaction or a load hangs on the stopped store")
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, ErrDiskFull) {
			t.Errorf("Close of the stopped store: %v, want its error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close hangs on the stopped store")
	}
	refuse.Off()
	// NB: a copy of the files, as another process would find them (the
	// stopped store keeps Pebble's lock on these).
	cp := vfs.NewMem()
	if _, err := vfs.Clone(mem, cp, "idx", "idx"); err != nil {
		t.Fatal(err)
	}
	d, err = Open("idx", &Options{fs: cp, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for id, want := range acked {
		if doc, err := d.Get(id); err != nil || doc.Text != want {
			t.Errorf("Get(%s) reopened: %+v %v", id, doc, err)
		}
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Errorf("check reopened: %+v %v", rep, err)
	}
}
