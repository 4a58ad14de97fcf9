package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that writes are refused with ErrDiskFull, storing nothing, while
// the filesystem has less than DiskReserve free, that reads go on working,
// and that writes resume once there is room (reliability R3). The free
// space is the filesystem's report, set by the test.
func TestDiskReserve(t *testing.T) {
	fs := vfs.NewMem()
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 1 << 30})
	if _, err := Open("idx", &Options{fs: fs, DiskReserve: 8 << 20}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("writable Open with 1 MiB free: %v, want ErrDiskFull", err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 1 << 30})
	d := mustOpen(t, "idx", &Options{fs: fs, DiskReserve: 8 << 20})
	if err := d.Put(Doc{ID: "a", Text: "the first document, stored while there is room"}, nil); err != nil {
		t.Fatal(err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 4 << 20, TotalBytes: 1 << 30})
	if err := d.Put(Doc{ID: "b", Text: "a second document, refused: the disk is nearly full"}, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Put with 4 MiB free: %v, want ErrDiskFull", err)
	} else if !strings.Contains(err.Error(), "4.0 MiB free") || strings.Contains(err.Error(), "0.0 MiB") {
		t.Errorf("Put with 4 MiB free: %v; want the free space in MiB and the write's size in KiB or bytes", err)
	}
	if err := d.Delete("a", nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Delete with 4 MiB free: %v, want ErrDiskFull", err)
	}
	one := func(yield func(Doc, error) bool) {
		yield(Doc{ID: "c", Text: "a loaded document, refused as well"}, nil)
	}
	if _, err := d.Load(context.Background(), one, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Load with 4 MiB free: %v, want ErrDiskFull", err)
	}
	if _, err := d.PurgeEmptyLists(context.Background()); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Fatalf("PurgeEmptyLists with 4 MiB free: %v", err)
	}
	// NB: Compact ignored the reserve, and writes the most of all.
	if err := d.Compact(context.Background()); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Compact with 4 MiB free: %v, want ErrDiskFull", err)
	}
	// It needs room for the store beyond the reserve.
	if store := int64(dirBytes(fs, "idx")); store > 0 {
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + store/2), TotalBytes: 1 << 30})
		if err := d.Compact(context.Background()); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "live data") {
			t.Fatalf("Compact with room for half the store beyond the reserve: %v, want ErrDiskFull", err)
		}
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + 2*store), TotalBytes: 1 << 30})
		if err := d.Compact(context.Background()); err != nil {
			t.Fatalf("Compact with room for the store beyond the reserve: %v", err)
		}
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 4 << 20, TotalBytes: 1 << 30})
	} else {
		t.Fatal("an index of no bytes")
	}
	if n, _ := d.Count(); n != 1 {
		t.Fatalf("Count = %d after refused writes, want 1", n)
	}
	if _, err := d.Get("a"); err != nil {
		t.Fatalf("Get while the disk is full: %v", err)
	}
	if ok, _ := d.Has("b"); ok {
		t.Fatal("the refused document was stored")
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 1 << 30})
	if err := d.Put(Doc{ID: "b", Text: "a second document, stored once there is room again"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// A writable Open needs less room than a write (8 MiB and two
	// memtables: 24 MiB by default, 16 MiB with 4 MiB memtables): an index
	// whose writes are refused still opens and answers reads.
	for _, c := range []struct{ free, mem int64 }{{24 << 20, 0}, {16 << 20, 4 << 20}} {
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(c.free - 1<<20), TotalBytes: 1 << 30})
		// NB: the message says what the open needs, not the 64 MiB
		// reserve: it said "lshdb keeps 24.0 MiB in reserve" (a review).
		if _, err := Open("idx", &Options{fs: fs, DiskReserve: 64 << 20, MemTableSize: c.mem}); !errors.Is(err, ErrDiskFull) ||
			!strings.Contains(err.Error(), fmt.Sprintf("a writable open needs %s of it", mib(c.free))) || strings.Contains(err.Error(), "in reserve") {
			t.Fatalf("writable Open with %d bytes free, memtables of %d: %v, want ErrDiskFull saying what the open needs", c.free-1<<20, c.mem, err)
		}
		fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(c.free), TotalBytes: 1 << 30})
		w := mustOpen(t, "idx", &Options{fs: fs, DiskReserve: 64 << 20, MemTableSize: c.mem})
		if n, _ := w.Count(); n != 2 {
			t.Fatalf("Count = %d with %d bytes free, want 2", n, c.free)
		}
		if err := w.Put(Doc{ID: "c", Text: "refused: below the 64 MiB reserve"}, nil); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("Put with %d bytes free and a 64 MiB reserve: %v, want ErrDiskFull", c.free, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Read-only opens need no room.
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1, TotalBytes: 1 << 30})
	r := mustOpen(t, "idx", &Options{fs: fs, ReadOnly: true, DiskReserve: 8 << 20})
	defer r.Close()
	if n, _ := r.Count(); n != 2 {
		t.Fatalf("Count = %d after reopening, want 2", n)
	}
}

// diskFullCases are TestDiskFullTmpfs's filesystems and options: a small
// reserve with small memtables, and the defaults (whose reserve covers
// four of their memtables and whose write-ahead logs preallocate 1.1
// memtables each).
var diskFullCases = []struct {
	name, size string
	opts       Options
}{
	{"small", "48m", Options{DiskReserve: 16 << 20, MemTableSize: 4 << 20}},
	{"defaults", "160m", Options{}},
}

// Ensure that filling a real filesystem ends in ErrDiskFull, not a panic
// or a hang, that everything acknowledged before it survives a reopen,
// and that the index checks clean (reliability R3, on a tmpfs).
// It runs in a child process as root: mounting needs it, and a Pebble
// panic must fail the test rather than kill the test binary.
func TestDiskFullTmpfs(t *testing.T) {
	if dir := os.Getenv("LSHDB_DISKFULL_DIR"); dir != "" {
		i, _ := strconv.Atoi(os.Getenv("LSHDB_DISKFULL_CASE"))
		diskFullChild(t, dir, diskFullCases[i].opts)
		return
	}
	if testing.Short() {
		t.Skip("short mode: fills a tmpfs")
	}
	for i, c := range diskFullCases {
		t.Run(c.name, func(t *testing.T) {
			inTmpfsChild(t, "TestDiskFullTmpfs", c.size, "LSHDB_DISKFULL_DIR", fmt.Sprint("LSHDB_DISKFULL_CASE=", i))
		})
	}
}

// inTmpfsChild runs the test named test in a child process, with the
// environment variable dirVar naming an index directory on a tmpfs of
// size it mounts (skipping where it cannot: it needs root), and extra
// variables; the child must log "disk full after", within five minutes
// (a hang on the full disk fails).
func inTmpfsChild(t *testing.T, test, size, dirVar string, extra ...string) {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	const limit = 5 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), dirVar+"="+filepath.Join(mnt, "idx")), extra...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("child: still writing after %v on the full disk (a hang)\n%s", limit, out)
	}
	if err != nil || !strings.Contains(string(out), "disk full after") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// fillUntilFull puts batches of 200 documents (doc-0000000, …) into d
// until a put fails, which must be with ErrDiskFull, and returns how many
// were acknowledged. Their texts compress well, unless random: then each
// is 5,000 random letters and spaces, which no compressor shrinks much
// (flushes need about the room the log took).
func fillUntilFull(t *testing.T, d *DB, random bool) int {
	t.Helper()
	stored := 0
	var err error
	rng := rand.New(rand.NewPCG(1, 2))
	for batch := 0; batch < 10000; batch++ {
		var docs []Doc
		for i := range 200 {
			n := batch*200 + i
			text := strings.Repeat(fmt.Sprintf("words of document %d ", n), 40)
			if random {
				b := make([]byte, 5000)
				for j := range b {
					b[j] = "abcdefghijklmnopqrstuvwxyz     "[rng.IntN(31)]
				}
				text = string(b)
			}
			docs = append(docs, Doc{ID: fmt.Sprintf("doc-%07d", n), Text: text})
		}
		if _, err = d.PutBatch(docs, nil); err != nil {
			break
		}
		stored += len(docs)
	}
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("after %d documents: %v, want ErrDiskFull", stored, err)
	}
	t.Logf("disk full after %d documents: %v", stored, err)
	return stored
}

// Ensure that with the reserve off (DiskReserve -1) a full disk still
// ends a run of writes in ErrDiskFull, not a hang: Pebble retries the
// failed flush for ever, and writes went on into memtables until their
// count stopped every write, at 100% of a core (an operator's review,
// O1). Everything acknowledged is there after a reopen, and the index
// checks clean. In a child process as TestDiskFullTmpfs, which fails
// after five minutes (the hang; the old code hung for good).
func TestDiskFullNoReserve(t *testing.T) {
	if dir := os.Getenv("LSHDB_DISKFULL_NORESERVE_DIR"); dir != "" {
		noReserveChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("short mode: fills a tmpfs")
	}
	inTmpfsChild(t, "TestDiskFullNoReserve", "60m", "LSHDB_DISKFULL_NORESERVE_DIR")
}

func noReserveChild(t *testing.T, dir string) {
	opts := &Options{DiskReserve: -1}
	d := mustOpen(t, dir, opts)
	stored := fillUntilFull(t, d, true)
	last := fmt.Sprintf("doc-%07d", stored-1)
	if err := d.RoomToWrite(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("RoomToWrite on the full disk: %v, want ErrDiskFull", err)
	}
	// NB: what an embedder's review did next: a delete, a compaction and
	// a put, each refused; then Close waited in Pebble's write stall for
	// ever (its flush at close), and a writable open of the full disk
	// hung in the replay's flush (D1).
	if err := d.Delete("doc-0000000", nil); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Errorf("Delete on the full disk: %v, want ErrDiskFull or nothing", err)
	} else if err == nil {
		stored--
	}
	if err := d.Compact(context.Background()); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Errorf("Compact on the full disk: %v, want ErrDiskFull or nothing", err)
	}
	if err := d.Put(Doc{ID: "after", Text: "one more document"}, nil); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Put on the full disk: %v, want ErrDiskFull", err)
	}
	within(t, "Close on the full disk", func() error { return d.Close() }, nil)
	// NB: refused when the logs to replay do not fit with a MiB to
	// spare, computed here from the directory and statfs; "that or
	// none" let an open that should have been refused pass (a
	// maintainer review's K8). The delete and the compaction may have
	// freed room enough.
	var want error
	var logs int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if _, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".log"), 10, 64); err == nil && strings.HasSuffix(e.Name(), ".log") {
			if fi, err := e.Info(); err == nil {
				logs += fi.Size()
			}
		}
	}
	free := freeBytes(dir)
	if free < 0 {
		t.Fatal("the free space on the tmpfs is not known")
	}
	if free < logs+1<<20 {
		want = ErrDiskFull
	}
	t.Logf("%d bytes of logs to replay; refusal expected: %v", logs, want != nil)
	var w *DB
	within(t, "a writable open of the full disk, without a reserve", func() (err error) {
		w, err = Open(dir, opts)
		return err
	}, want)
	if w != nil {
		within(t, "Close of the reopened index", func() error { return w.Close() }, nil)
	}
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	defer r.Close()
	if n, _ := r.Count(); int(n) != stored {
		t.Fatalf("Count = %d after reopening, want the %d acknowledged", n, stored)
	}
	if ok, err := r.Has(last); !ok || err != nil {
		t.Fatalf("the last acknowledged document is missing after reopen: %v", err)
	}
	rep, err := r.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("Check after disk full: %v %v", err, rep.Problems)
	}
}

// within runs f, failing the test if it has not returned within a
// minute (a hang), if it panicked (a program would end), or if it
// returned other than want (nil: no error); it returns f's error.
func within(t *testing.T, what string, f func() error, want error) error {
	t.Helper()
	type result struct {
		err      error
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panicked: r}
			}
		}()
		done <- result{err: f()}
	}()
	select {
	case r := <-done:
		if r.panicked != nil {
			t.Fatalf("%s panicked (a program would end): %v", what, r.panicked)
		}
		if want == nil && r.err != nil || want != nil && !errors.Is(r.err, want) {
			t.Fatalf("%s: %v, want %v", what, r.err, want)
		}
		t.Logf("%s: %v", what, r.err)
		return r.err
	case <-time.After(time.Minute):
		t.Fatalf("%s: no return within a minute (a hang)", what)
		return nil
	}
}

func diskFullChild(t *testing.T, dir string, o Options) {
	opts := &o
	d := mustOpen(t, dir, opts)
	stored := fillUntilFull(t, d, false)
	lastBatch := fmt.Sprintf("doc-%07d", stored-1)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The disk is still full: a writable open still works and refuses
	// writes; a read-only one needs no room at all.
	// (Reopening may free a little: the old WAL is gone once flushed.)
	w := mustOpen(t, dir, opts)
	if n, _ := w.Count(); int(n) != stored {
		t.Fatalf("Count = %d after reopening, want the %d acknowledged", n, stored)
	}
	for i := 0; ; i++ {
		err := w.Put(Doc{ID: fmt.Sprintf("more-%d", i), Text: strings.Repeat(fmt.Sprintf("more words %d ", i), 40)}, nil)
		if errors.Is(err, ErrDiskFull) {
			break
		}
		if err != nil || i == 100000 {
			t.Fatalf("Put %d after reopening on the full disk: %v, want ErrDiskFull in the end", i, err)
		}
		stored++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	defer r.Close()
	if n, _ := r.Count(); int(n) != stored {
		t.Fatalf("Count = %d after reopening, want the %d acknowledged", n, stored)
	}
	for _, id := range []string{"doc-0000000", lastBatch} {
		if ok, err := r.Has(id); !ok || err != nil {
			t.Fatalf("acknowledged %s missing after reopen: %v", id, err)
		}
	}
	rep, err := r.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("Check after disk full: %v %v", err, rep.Problems)
	}
	// Pairs and Clusters spill into the index's directory: on the full
	// disk they run or fail with ErrDiskFull (their spill's ENOSPC matched
	// no sentinel).
	for _, err := range r.Pairs(context.Background(), nil) {
		if err != nil && !errors.Is(err, ErrDiskFull) {
			t.Fatalf("Pairs on the full disk: %v, want ErrDiskFull", err)
		}
		if err != nil {
			t.Logf("pairs on the full disk: %v", err)
		}
	}
	if _, err := r.Clusters(context.Background(), nil); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Clusters on the full disk: %v, want ErrDiskFull", err)
	}
}

// BenchmarkPutOneReserve measures what the disk-reserve check (a statfs
// per committed batch) adds to the smallest write: one unsynced document
// per call, with the check and without it (DiskReserve −1), in one run.
func BenchmarkPutOneReserve(b *testing.B) {
	for _, c := range []struct {
		name    string
		reserve int64
	}{{"off", -1}, {"on", 0}, {"off-again", -1}, {"on-again", 0}} {
		b.Run(c.name, func(b *testing.B) {
			d := mustOpen(b, b.TempDir(), &Options{NoSync: true, DiskReserve: c.reserve})
			defer d.Close()
			i := 0
			for b.Loop() {
				if err := d.Put(Doc{ID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("a small document, number %d of many", i)}, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// quotaFS is a filesystem of capacity bytes, of which the files under
// root use what they hold: its free space grows when they are removed.
type quotaFS struct {
	vfs.FS
	root     string
	capacity int64
}

func (f quotaFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	var used int64
	var walk func(dir string)
	walk = func(dir string) {
		names, _ := f.List(dir)
		for _, n := range names {
			p := f.PathJoin(dir, n)
			if fi, err := f.Stat(p); err == nil {
				if fi.IsDir() {
					walk(p)
				} else {
					used += fi.Size()
				}
			}
		}
	}
	walk(f.root)
	return vfs.DiskUsage{AvailBytes: uint64(max(f.capacity-used, 0)), TotalBytes: uint64(f.capacity)}, nil
}

// Ensure that what an interrupted load left in the index's directory
// (its temporary tables: up to the size of its input) does not make the
// next writable Open refuse the index as out of space: it is removed
// before the free space is checked, and the open succeeds with the room
// it freed.
func TestOpenRemovesLeftoversBeforeTheReserve(t *testing.T) {
	mem := vfs.NewMem()
	fs := quotaFS{FS: mem, root: "idx", capacity: 64 << 20}
	d := mustOpen(t, "idx", &Options{fs: fs, DiskReserve: 8 << 20})
	if err := d.Put(Doc{ID: "a", Text: "a document stored before the load that was killed"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// A killed load's tables: 60 MiB, which leaves less than the
	// reserve free.
	if err := mem.MkdirAll("idx/"+loadTmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := mem.Create("idx/"+loadTmpDir+"/records-000001.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 60<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if u, _ := fs.GetDiskUsage("idx"); u.AvailBytes >= 8<<20 {
		t.Fatalf("the test needs less than the reserve free: %d bytes", u.AvailBytes)
	}
	d, err = Open("idx", &Options{fs: fs, DiskReserve: 8 << 20})
	if err != nil {
		t.Fatalf("writable Open with a killed load's 60 MiB left: %v", err)
	}
	defer d.Close()
	if _, err := mem.Stat("idx/" + loadTmpDir); !os.IsNotExist(err) {
		t.Fatalf("the killed load's directory: %v, want it removed", err)
	}
	if got, err := d.Get("a"); err != nil || got.ID != "a" {
		t.Fatalf("Get(a) = %+v, %v", got, err)
	}
}

// Ensure that Compact of a store of replaced documents needs room for
// its live data, not for the whole store: four loads of the same
// documents compact with half the store free beyond the reserve (room for
// the whole store refused the compaction such a disk needs), and not with
// a tenth of it.
func TestCompactRoomForLiveData(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "idx", &Options{fs: fs, DiskReserve: 8 << 20})
	defer d.Close()
	docs := make([]Doc, 2000)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("document %d, a text of some words that make shingles, %d", i, i*7)}
	}
	for range 4 {
		if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
			t.Fatal(err)
		}
	}
	store := int64(dirBytes(fs, "idx"))
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + store/10), TotalBytes: 1 << 30})
	if err := d.Compact(context.Background()); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Compact with a tenth of the store free beyond the reserve: %v, want ErrDiskFull", err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + store/2), TotalBytes: 1 << 30})
	if err := d.Compact(context.Background()); err != nil {
		t.Fatalf("Compact of a store three quarters replaced, with half of it free beyond the reserve: %v", err)
	}
}

// Ensure that lshdb's temporary files keep the disk reserve: a Pairs run
// that spills its candidates and a Load's runs and tables stop with
// ErrDiskFull when the free space falls to the reserve, remove what they
// wrote, and leave the index as it was. Only writes checked the reserve:
// one pairs request over HTTP at a low threshold filled a disk to its
// last byte with run files, where Pebble panics or retries without end.
func TestTempFilesKeepTheReserve(t *testing.T) {
	defer func(n int64) { tempCheckBytes = n }(tempCheckBytes)
	tempCheckBytes = 4 << 10
	mem := vfs.NewMem()
	fs := &quotaFS{FS: mem, root: "idx", capacity: 1 << 30}
	const reserve = 1 << 20
	d := mustOpen(t, "idx", &Options{fs: fs, DiskReserve: reserve, NoSync: true})
	defer d.Close()
	// Many documents alike: at a low threshold every pair is a
	// candidate, and a small budget spills them.
	docs := make([]Doc, 600)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("the same few words in every one of them, and a number %d", i)}
	}
	if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
		t.Fatal(err)
	}
	po := &PairsOptions{Threshold: 0.3, Memory: 64 << 10}
	want, err := pairsOf(d, po)
	if err != nil || len(want) < 1000 {
		t.Fatalf("pairs with room: %d, %v", len(want), err)
	}
	store := int64(dirBytes(mem, "idx"))
	fs.capacity = store + reserve + 16<<10
	if _, err := pairsOf(d, po); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("pairs spilling into the reserve: %v, want ErrDiskFull", err)
	}
	if got := int64(dirBytes(mem, "idx")); got != store {
		t.Errorf("the refused pairs left %d bytes, the index took %d", got, store)
	}
	more := make([]Doc, 3000)
	for i := range more {
		more[i] = Doc{ID: fmt.Sprint("m", i), Text: fmt.Sprintf("another document, number %d of a load too large for the room left", i)}
	}
	if _, err := d.Load(context.Background(), seqOf(more), &LoadOptions{Memory: 1 << 20}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a load into the reserve: %v, want ErrDiskFull", err)
	}
	if n, err := d.Count(); n != uint64(len(docs)) || err != nil {
		t.Errorf("after the refused load: %d documents, %v", n, err)
	}
	fs.capacity = 1 << 30
	got, err := pairsOf(d, po)
	if err != nil || len(got) != len(want) {
		t.Errorf("pairs with room again: %d pairs, %v; want %d", len(got), err, len(want))
	}
	// A read-only handle's are checked too (its pairs run fills a disk
	// as well), and run with room.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	store = int64(dirBytes(mem, "idx"))
	fs.capacity = store + reserve + 16<<10
	r := mustOpen(t, "idx", &Options{fs: fs, ReadOnly: true, DiskReserve: reserve})
	defer r.Close()
	if _, err := pairsOf(r, po); !errors.Is(err, ErrDiskFull) {
		t.Errorf("pairs of a read-only handle spilling into the reserve: %v, want ErrDiskFull", err)
	}
	fs.capacity = 1 << 30
	if got, err := pairsOf(r, po); err != nil || len(got) != len(want) {
		t.Errorf("pairs of a read-only handle with room: %d pairs, %v; want %d", len(got), err, len(want))
	}
}

// pairsOf returns the pairs of d, or the error that ended them.
func pairsOf(d *DB, po *PairsOptions) ([]Pair, error) {
	var out []Pair
	for p, err := range d.Pairs(context.Background(), po) {
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Ensure that reserveFS checks the reserve as a file grows, not only as
// files are made: one large temporary file (a load's table) stops with
// ErrDiskFull once the free space falls to the reserve, by Write and by
// WriteAt, within tempCheckBytes of it.
func TestReserveFSWrites(t *testing.T) {
	defer func(n int64) { tempCheckBytes = n }(tempCheckBytes)
	tempCheckBytes = 4 << 10
	const reserve = 64 << 10
	for _, at := range []bool{false, true} {
		mem := vfs.NewMem()
		if err := mem.MkdirAll("idx", 0o755); err != nil {
			t.Fatal(err)
		}
		rfs := &reserveFS{FS: &quotaFS{FS: mem, root: "idx", capacity: reserve + 32<<10}, dir: "idx", reserve: reserve}
		f, err := rfs.Create("idx/big", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 1<<10)
		var written int64
		for ; written < 1<<20; written += int64(len(chunk)) {
			if at {
				_, err = f.WriteAt(chunk, written)
			} else {
				_, err = f.Write(chunk)
			}
			if err != nil {
				break
			}
		}
		f.Close()
		if !errors.Is(err, ErrDiskFull) || written < 32<<10-tempCheckBytes || written > 32<<10+tempCheckBytes {
			t.Errorf("WriteAt %v: stopped after %d bytes with %v; want ErrDiskFull within %d bytes of 32 KiB", at, written, err, tempCheckBytes)
		}
	}
}

// Ensure that the writes that free space (Delete, DeleteIDs, a purge of
// emptied lists, Compact) keep only the reserve a writable Open needs
// (8 MiB and two memtables), where writes that add a document keep
// DiskReserve: an index whose writes were refused could not be emptied
// either, and the way out the message named (a lower reserve) let every
// write through (a review). Below the open's reserve they are refused
// too. The oracle: the documents counted and read back after a reopen.
func TestFreeingWritesBelowTheReserve(t *testing.T) {
	fs := vfs.NewMem()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	o := func() *Options {
		return &Options{fs: fs, DiskReserve: 64 << 20, MemTableSize: 4 << 20, clock: clock.now, ExpirySweep: -1, keepEmptied: true}
	}
	d := mustOpen(t, "idx", o())
	var docs []Doc
	for i := range 200 {
		docs = append(docs, Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("document %d of an index on a nearly full disk, %d", i, i*13)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	// Ten that expire, for the sweep.
	var expiring []Doc
	for i := range 10 {
		expiring = append(expiring, Doc{ID: fmt.Sprint("e", i), Text: fmt.Sprintf("a document that expires in a minute, number %d", i)})
	}
	if _, err := d.PutBatch(expiring, &WriteOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// 30 MiB free: below the 64 MiB reserve, above the open's 16 MiB and
	// a new log's room (21 MiB).
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 30 << 20, TotalBytes: 1 << 30})
	if err := d.Put(Doc{ID: "new", Text: "a new document, refused below the reserve"}, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Put of a new document with 30 MiB free: %v, want ErrDiskFull", err)
	}
	if err := d.Put(Doc{ID: "d1", Text: "a replacement, refused as well: it writes a document"}, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Put replacing a document with 30 MiB free: %v, want ErrDiskFull", err)
	}
	if err := d.Delete("d0", nil); err != nil {
		t.Fatalf("Delete with 30 MiB free: %v", err)
	}
	if _, err := d.DeleteIDs([]string{"d2", "d3", "d4"}, nil); err != nil {
		t.Fatalf("DeleteIDs with 30 MiB free: %v", err)
	}
	clock.advance(2 * time.Minute)
	if n, err := d.SweepExpired(context.Background()); err != nil || n != 10 {
		t.Fatalf("SweepExpired with 30 MiB free: %d, %v; want 10", n, err)
	}
	if n, err := d.PurgeEmptyLists(context.Background()); err != nil || n == 0 {
		t.Fatalf("PurgeEmptyLists with 30 MiB free: %d lists, %v; want some (the deletes emptied lists)", n, err)
	}
	if err := d.Compact(context.Background()); err != nil {
		t.Fatalf("Compact with 30 MiB free: %v", err)
	}
	// 18 MiB free: above the open's 16 MiB, below it and a new log's
	// room (5 MiB): a delete would leave the index where no writable
	// open, so no other delete, is let through.
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 18 << 20, TotalBytes: 1 << 30})
	if err := d.Delete("d5", nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Delete with 18 MiB free: %v, want ErrDiskFull", err)
	}
	// 12 MiB free: below the open's reserve, so nothing is written.
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 12 << 20, TotalBytes: 1 << 30})
	if err := d.Delete("d5", nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Delete with 12 MiB free: %v, want ErrDiskFull", err)
	} else if !strings.Contains(err.Error(), "frees space") || strings.Contains(err.Error(), "DiskReserve") {
		// NB: a lower DiskReserve, which its message names, lets every
		// write through.
		t.Errorf("Delete with 12 MiB free: %v; want the reserve of writes that free space named, not DiskReserve", err)
	}
	if err := d.Compact(context.Background()); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Compact with 12 MiB free: %v, want ErrDiskFull", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 1 << 30})
	d = mustOpen(t, "idx", o())
	defer d.Close()
	if n, _ := d.Count(); n != 196 {
		t.Errorf("Count after reopening = %d, want 196 (200 less 4 deleted)", n)
	}
	for _, id := range []string{"d0", "d2", "d3", "d4", "new"} {
		if ok, _ := d.Has(id); ok {
			t.Errorf("%s is stored", id)
		}
	}
	for _, id := range []string{"d1", "d5"} {
		if got, err := d.Get(id); err != nil || got.Text != docs[id[1]-'0'].Text {
			t.Errorf("Get(%s) = %+v, %v; want it as first stored", id, got, err)
		}
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Errorf("Check: %+v, %v", rep, err)
	}
	// A handle that deleted below DiskReserve flushes its deletes into
	// tables at Close: it kept them in its log, freeing nothing (a review).
	d.Close()
	var logged strings.Builder
	lo := o()
	lo.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	d = mustOpen(t, "idx", lo)
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 30 << 20, TotalBytes: 1 << 30})
	if err := d.Delete("d6", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logged.String(), "no room to flush") {
		t.Errorf("Close after a delete with 30 MiB free did not flush: %s", logged.String())
	}
}

// enospcFS fails every write to a table file with ENOSPC while on is set:
// a disk full for Pebble's flushes and compactions, not for its logs, nor
// for the tables whose paths hold spare (when not empty: a load's own,
// made in loadTmpDir, then ingested).
type enospcFS struct {
	vfs.FS
	on    *atomic.Bool
	spare string
}

type enospcFile struct {
	vfs.File
	on   *atomic.Bool
	name string
}

func (f enospcFile) Write(p []byte) (int, error) {
	if f.on.Load() {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (fs enospcFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".sst") || fs.spare != "" && strings.Contains(name, fs.spare) {
		return f, err
	}
	return enospcFile{f, fs.on, name}, nil
}

// Ensure that writes are refused while flushes fail for lack of space, and
// let through again once one succeeds (Pebble retries it), and that a
// compaction's failure alone refuses nothing: it set the refusal for good,
// since no flush ran to clear it (a maintainer's review). The oracle: the
// refusals, and the documents counted at the end.
func TestNoSpaceRefusesWhileFlushesFail(t *testing.T) {
	var full atomic.Bool
	var logged syncBuffer
	d := mustOpen(t, "idx", &Options{fs: enospcFS{FS: vfs.NewMem(), on: &full}, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	defer d.Close()
	put := func(id string) error {
		return d.Put(Doc{ID: id, Text: "a document of a few words, " + id}, nil)
	}
	for i := range 200 {
		if err := put(fmt.Sprint("a", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	// A compaction fails for lack of space, then the disk has room.
	// NB: a background compaction may merge the two flushes' tables
	// before the disk fills, and the manual one then has nothing to
	// write and succeeds (a CI run): the replacements and the flush are
	// made again until a compaction has work and fails (ten tries).
	// NB: Pebble retries the failed compaction, and the manual one waits
	// for it: it returned its context's deadline, which a compaction that
	// had not yet written anything on a slow machine returned too (a
	// maintainer review's K8). A compaction failed once Pebble reported a
	// background error with the disk full and no flush under way; the
	// manual one is then cancelled.
	failed := false
	for try := 0; try < 10 && !failed; try++ {
		full.Store(false)
		for i := range 200 {
			if err := put(fmt.Sprint("a", i)); err != nil { // replaced: a compaction has work
				t.Fatal(err)
			}
		}
		if err := d.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
		before := d.damage.failures.Load()
		full.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.pdb.Compact(ctx, []byte{0}, []byte{0xff}, true) }()
		deadline := time.Now().Add(10 * time.Second)
		for !failed && time.Now().Before(deadline) {
			select {
			case err := <-done:
				// NB: it had nothing to write (a background compaction
				// merged the tables first): try again. Or it failed on the
				// full disk itself and returned the error before the poll
				// below saw Pebble's report of it (a CI run): the report
				// comes, and the compaction has failed.
				done = nil
				if errors.Is(err, syscall.ENOSPC) {
					deadline = time.Now().Add(10 * time.Second)
					continue
				}
				deadline = time.Time{}
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("the compaction: %v", err)
				}
			case <-time.After(5 * time.Millisecond):
			}
			failed = d.damage.failures.Load() > before
		}
		cancel()
		if done != nil {
			<-done
		}
	}
	if !failed {
		t.Fatal("no compaction on the full disk failed, in ten tries")
	}
	// NB: the disk still full, no flush or compaction succeeded since.
	if p := d.damage.bgNoSpace.Load(); p == nil || !errors.Is(*p, syscall.ENOSPC) {
		t.Errorf("after a compaction failed for want of space, the failure kept for Close: %v", p)
	}
	full.Store(false)
	if err := put("after-compaction"); err != nil {
		t.Fatalf("a put once the disk has room, after a compaction failed: %v", err)
	}
	// A flush fails for lack of space: writes are refused, then let
	// through once the disk has room and Pebble's retry succeeds.
	full.Store(true)
	if _, err := d.pdb.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for d.RoomToWrite() == nil {
		if time.Now().After(deadline) {
			t.Fatal("writes still let through a minute after flushes began to fail")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := put("refused"); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "last flush found no space") {
		t.Fatalf("a put while flushes fail: %v, want ErrDiskFull", err)
	}
	// A delete too (roomToFree): it would wait in Pebble's stall as well.
	if err := d.Delete("a1", nil); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "last flush found no space") {
		t.Fatalf("a delete while flushes fail: %v, want ErrDiskFull", err)
	}
	full.Store(false)
	for d.RoomToWrite() != nil {
		if time.Now().After(deadline) {
			t.Fatal("writes still refused a minute after the disk had room")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := put("after-flush"); err != nil {
		t.Fatalf("a put once flushes succeed again: %v", err)
	}
	if n, err := d.Count(); err != nil || n != 202 {
		t.Fatalf("Count = %d, %v; want 202", n, err)
	}
	// The flushes succeed again: Close warns of nothing (RT-10).
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logged.String(), "ran out of disk space") {
		t.Errorf("Close once flushes succeeded again warned:\n%s", logged.String())
	}
}

// Ensure that Close's warning of a background flush's or compaction's
// failure for want of space says what it is and what to do, and that a
// flush that succeeds after the failure clears it (as one at Close does):
// a build under --disk-reserve -1 that filled the disk exited 0 beside
// Pebble's bare line (an operator's review, OP-5), and a long-lived
// handle's disk may fill once and be freed (RT-10). The failure is set
// as Pebble's BackgroundError sets it (TestNoSpaceRefusesWhileFlushesFail
// sees it set so).
func TestCloseWarnsOfBackgroundNoSpace(t *testing.T) {
	var logged syncBuffer
	d := mustOpen(t, t.TempDir(), &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	defer d.Close()
	var noSpace error = &os.PathError{Op: "write", Path: "000009.sst", Err: syscall.ENOSPC}
	d.damage.bgNoSpace.Store(&noSpace)
	d.warnBackgroundNoSpace(nil)
	if !strings.Contains(logged.String(), "ran out of disk space: the writes acknowledged are kept") || !strings.Contains(logged.String(), "free space on its disk before the next write") {
		t.Errorf("the warning:\n%s", logged.String())
	}
	if err := d.Put(Doc{ID: "a", Text: "a document written once the disk had room"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if p := d.damage.bgNoSpace.Load(); p != nil {
		t.Errorf("a flush succeeded after the failure, which is still kept: %v", *p)
	}
}
