package db

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Ensure that Info reports the document count a model of the writes
// expects, the parameters given at creation, and the directory's size as
// the operating system lists it, and that it reads no file to do so
// (while Stats, on the same handle, does).
func TestInfoReadsNothing(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{Threshold: 0.6, Storage: StorageSets})
	model := map[string]bool{}
	for i := range 40 {
		id := fmt.Sprintf("doc%02d", i%30) // ids 0-9 written twice: replaced
		if err := d.Put(Doc{ID: id, Text: fmt.Sprintf("document number %d says something about %d things", i, i*7)}, nil); err != nil {
			t.Fatal(err)
		}
		model[id] = true
	}
	for _, id := range []string{"doc03", "doc17", "doc29"} {
		if err := d.Delete(id, nil); err != nil {
			t.Fatal(err)
		}
		delete(model, id)
	}
	// NB: flushed, so that the records are in tables, where reading them
	// is reading files (a read-only Open replays the log into memory).
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// NB: read-only, so that no flush, compaction or table-stats
	// collection (Pebble reads tables in the background after a writable
	// Open) reads files while reads are counted.
	var reads atomic.Int64
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileRead, errorfs.OpFileReadAt, errorfs.OpOpen:
			reads.Add(1)
		}
		return nil
	}))
	// A block cache too small to hold a block: every read of a record
	// is a read of a file.
	d = mustOpen(t, dir, &Options{ReadOnly: true, fs: fs, CacheSize: 1})
	defer d.Close()
	reads.Store(0)
	info, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("Info opened or read files %d times; want none", n)
	}
	if info.Docs != uint64(len(model)) || info.Written != 40 {
		t.Errorf("Info.Docs = %d, Written %d; the model holds %d, 40 were written", info.Docs, info.Written, len(model))
	}
	if p := info.Params; p.Threshold != 0.6 || p.Storage != StorageSets || p.Bands.B == 0 || p.Bands.R == 0 {
		t.Errorf("Info.Params = %+v; want threshold 0.6, storage sets, a banding", p)
	}
	var files []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if want := duBytes(t, files...); info.DiskBytes != want || want == 0 {
		t.Errorf("Info.DiskBytes = %d; du says the directory's files take %d", info.DiskBytes, want)
	}

	// The control: the counter sees the reads a full scan makes.
	st, err := d.Stats(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Error("Stats read no file: the counter cannot see reads")
	}
	if st.Docs != info.Docs || st.DiskBytes != info.DiskBytes || st.Params.Bands != info.Params.Bands {
		t.Errorf("Stats says %d docs, %d bytes, %v; Info %d, %d, %v", st.Docs, st.DiskBytes, st.Params.Bands, info.Docs, info.DiskBytes, info.Params.Bands)
	}

	// Closed: the error every call gives.
	d.Close()
	if _, err := d.Info(); err != ErrClosed {
		t.Errorf("Info after Close: %v; want ErrClosed", err)
	}
}

// BenchmarkInfo measures Info against Stats (the full scan it replaces for
// the cheap facts) on the shared benchmark index (≥ 100,000 documents),
// each op one call of each, so that the ratio compares two measurements
// of the same run. Run with -benchtime=3x: a Stats call takes seconds.
func BenchmarkInfo(b *testing.B) {
	d, err := benchIndex()
	if err != nil {
		b.Fatal(err)
	}
	var info, stats time.Duration
	i := 0
	for b.Loop() {
		runInfo := func() {
			start := time.Now()
			if _, err := d.Info(); err != nil {
				b.Fatal(err)
			}
			info += time.Since(start)
		}
		runStats := func() {
			start := time.Now()
			if _, err := d.Stats(context.Background(), 5); err != nil {
				b.Fatal(err)
			}
			stats += time.Since(start)
		}
		if i++; i%2 == 0 {
			runInfo()
			runStats()
		} else {
			runStats()
			runInfo()
		}
	}
	b.ReportMetric(float64(info.Microseconds())/float64(i), "info-µs")
	b.ReportMetric(float64(stats.Milliseconds())/float64(i), "stats-ms")
	b.ReportMetric(float64(stats)/float64(info), "stats-x-info")
}

// Ensure that Info's (Written, Docs) changes with every kind of write
// (put, upsert, batch, load, delete, expiry sweep), stays the same over
// reads and a reopen, and never comes back to an earlier value: what a
// pairs file made before a write is refused by.
func TestInfoChangesWithEveryWrite(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMem()
	d, err := Open("db", &Options{fs: fs, clock: clock.now, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	seen := map[[2]uint64]string{}
	state := func() [2]uint64 {
		t.Helper()
		in, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		return [2]uint64{in.Written, in.Docs}
	}
	last := state()
	seen[last] = "the empty index"
	step := func(what string, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		now := state()
		if prev, ok := seen[now]; ok {
			t.Fatalf("after %s: Info (written, docs) = %v, as after %s", what, now, prev)
		}
		seen[now], last = what, now
	}
	text := func(i int) string {
		return fmt.Sprintf("document %d, which says a few things about the number %d", i, i)
	}
	step("a put", func() error { return d.Put(Doc{ID: "a", Text: text(1)}, nil) })
	step("an upsert", func() error { return d.Put(Doc{ID: "a", Text: text(2)}, nil) })
	step("a batch", func() error {
		_, err := d.PutBatch([]Doc{{ID: "b", Text: text(3)}, {ID: "c", Text: text(4)}}, nil)
		return err
	})
	step("a delete", func() error { return d.Delete("b", nil) })
	step("a load of an upsert", func() error {
		_, err := d.Load(context.Background(), seqOf([]Doc{{ID: "c", Text: text(5)}}), nil)
		return err
	})
	step("a put with a TTL", func() error { return d.Put(Doc{ID: "x", Text: text(6)}, &WriteOptions{TTL: time.Second}) })
	clock.advance(2 * time.Second)
	step("an expiry sweep", func() error { _, err := d.SweepExpired(context.Background()); return err })
	if _, err := d.QueryID(context.Background(), "a", nil); err != nil {
		t.Fatal(err)
	}
	if now := state(); now != last {
		t.Fatalf("a query changed Info from %v to %v", last, now)
	}
	d.Close()
	if d, err = Open("db", &Options{fs: fs, clock: clock.now}); err != nil {
		t.Fatal(err)
	}
	if now := state(); now != last || now != [2]uint64{6, 2} {
		t.Fatalf("after a reopen Info is %v, before it %v; want (6, 2): six documents written, two stored", now, last)
	}
}

// Ensure that Info counts a killed load's temporary files apart
// (TempBytes, within DiskBytes), and none once a writable Open has
// removed them. The oracle: the space du gives for the file written there
// by hand.
func TestInfoTempBytes(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document of the index"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.MkdirAll(filepath.Join(dir, loadTmpDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, loadTmpDir, "000001.sst"), make([]byte, 100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	in, err := ro.Info()
	ro.Close()
	tmp := duBytes(t, filepath.Join(dir, loadTmpDir, "000001.sst"))
	if err != nil || in.TempBytes != tmp || tmp < 100_000 || in.DiskBytes <= in.TempBytes {
		t.Fatalf("read-only, a killed load's files left: %+v %v; want TempBytes %d (du's) within DiskBytes", in, err, tmp)
	}
	rw := mustOpen(t, dir, nil)
	defer rw.Close()
	if in2, err := rw.Info(); err != nil || in2.TempBytes != 0 || in2.DiskBytes-in2.LogBytes > in.DiskBytes-in.LogBytes-tmp+1<<20 {
		t.Fatalf("after a writable open: %+v %v; want no temporary bytes", in2, err)
	}
}

// Ensure that Stats counts the write-ahead log's files (LogBytes): after
// a few Puts their data is only there, the tables held none, and stats
// read as an empty index. The oracle is the size of the store's .log
// files.
func TestStatsLogBytes(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	defer d.Close()
	for i := range 50 {
		if err := d.Put(Doc{ID: fmt.Sprint("doc", i), Text: fmt.Sprintf("document number %d of a handful written by Put", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	st, err := d.Stats(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if logs := duBytes(t, names...); st.LogBytes != logs || logs < st.StoredBytes["docs"] {
		t.Errorf("LogBytes %d, du says the .log files take %d (the documents' records alone take %d)", st.LogBytes, logs, st.StoredBytes["docs"])
	}
	in, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	if logs := duBytes(t, names...); in.LogBytes != logs {
		t.Errorf("Info.LogBytes %d, du says the .log files take %d", in.LogBytes, logs)
	}
	if st.TableBytes["docs"] != 0 {
		t.Logf("the records reached a table already (%d bytes): the premise of this test does not hold here", st.TableBytes["docs"])
	}
}

// duBytes is the disk space that du gives for files, in bytes (their
// allocated blocks: Pebble allocates a write-ahead log ahead, so its
// size says much less); the test skips where du is not GNU du.
func duBytes(t *testing.T, files ...string) uint64 {
	t.Helper()
	if len(files) == 0 {
		return 0
	}
	out, err := exec.Command("du", append([]string{"-B1", "--"}, files...)...).Output()
	if err != nil {
		t.Skipf("du -B1: %v", err)
	}
	var n uint64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			t.Fatalf("du: %q", line)
		}
		n += v
	}
	return n
}

// Ensure that RecycledLogBytes counts the logs kept for reuse as LogBytes
// counts every log, in the space du gives: it took Pebble's apparent size
// of them (a few hundred bytes for logs allocated 9 MiB ahead), so LogBytes
// less it, shown as writes not yet flushed, was nearly all of LogBytes
// for an index that held none. The oracle: du of every .log file but the
// newest, the one a read-only handle would replay (logs kept for reuse
// have older numbers).
func TestRecycledLogBytes(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{MemTableSize: 1 << 20})
	for b := range 12 {
		docs := make([]Doc, 200)
		for i := range docs {
			docs[i] = Doc{ID: fmt.Sprintf("b%d-%d", b, i), Text: fmt.Sprintf("document %d of batch %d, long enough to fill memtables in a few batches %d", i, b, i*31)}
		}
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(names) < 2 {
		t.Fatalf("%d logs: want some kept for reuse", len(names))
	}
	slices.Sort(names)
	older := duBytes(t, names[:len(names)-1]...)
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	st, err := ro.Stats(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ro.Info()
	if err != nil {
		t.Fatal(err)
	}
	if st.RecycledLogBytes != older || in.RecycledLogBytes != older || st.LogBytes != duBytes(t, names...) {
		t.Errorf("RecycledLogBytes %d (Info %d) of LogBytes %d; du says the logs but the newest take %d, all %d", st.RecycledLogBytes, in.RecycledLogBytes, st.LogBytes, older, duBytes(t, names...))
	}
}

// Ensure that Stats is one point in time: a write while it runs (here
// between its reading of the posting lists and the rest) is in none of
// its figures. It read the lists, the count of documents and the bytes
// at three times, and a write between them gave a report at odds with
// itself (no document, and 16 lists of one; a review). The model: the
// figures of a Stats of the index before the write.
func TestStatsIsOnePointInTime(t *testing.T) {
	ctx := context.Background()
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "some text here, long enough"}, {ID: "b", Text: "another document altogether"}}, nil); err != nil {
		t.Fatal(err)
	}
	before, err := d.Stats(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { statsHook = nil }()
	statsHook = func() {
		statsHook = nil
		if err := d.Put(Doc{ID: "c", Text: "a third document, put while Stats runs"}, nil); err != nil {
			t.Error(err)
		}
	}
	during, err := d.Stats(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if during.Docs != before.Docs || during.StoredBytes["docs"] != before.StoredBytes["docs"] || during.StoredBytes["postings"] != before.StoredBytes["postings"] || !slices.Equal(during.Buckets.Lists, before.Buckets.Lists) {
		t.Errorf("Stats with a put while it ran: %d docs, %v bytes, lists %v; before the put: %d, %v, %v", during.Docs, during.StoredBytes, during.Buckets.Lists, before.Docs, before.StoredBytes, before.Buckets.Lists)
	}
	after, err := d.Stats(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if after.Docs != 3 {
		t.Errorf("Stats after the put: %d docs, want 3", after.Docs)
	}
}
