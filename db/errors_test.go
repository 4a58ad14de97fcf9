package db

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/minhash"
)

// TestHelperHoldLock is not a test: the lock test runs the test binary
// again with LSHDB_HOLD_LOCK set, so that another process holds the lock.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv("LSHDB_HOLD_LOCK")
	if dir == "" {
		t.Skip("helper process only")
	}
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	d.Close()
}

// Ensure that a database held by another process is refused with ErrLocked
// within a second, and by this process too.
func TestErrLocked(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, dir, nil).Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), "LSHDB_HOLD_LOCK="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	start := time.Now()
	_, err = Open(dir, nil)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a database held by another process: %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("ErrLocked took %v", el)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("locked by another process (pid %d)", cmd.Process.Pid)) {
		t.Errorf("message %q does not say what is wrong, and who holds it", err)
	}
	stdin.Close()
	cmd.Wait()
	// In this process.
	d := mustOpen(t, dir, nil)
	defer d.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open in one process: %v", err)
	}
}

// Ensure that an option that differs from the stored parameters is refused
// with a MismatchError naming the field and both values, and that zero
// options take the stored values.
func TestErrParamsMismatch(t *testing.T) {
	fs := vfs.NewMem()
	mustOpen(t, "db", &Options{fs: fs, NumPerm: 64, Threshold: 0.7, StoreText: true}).Close()
	_, err := Open("db", &Options{fs: fs, NumPerm: 128})
	var me *MismatchError
	if !errors.Is(err, ErrParamsMismatch) || !errors.As(err, &me) || me.Field != "NumPerm" || me.Stored != 64 || me.Requested != 128 {
		t.Fatalf("mismatch: %v", err)
	}
	if !strings.Contains(err.Error(), "NumPerm is 64 in the database, 128 was requested") {
		t.Errorf("message: %v", err)
	}
	// Several differ: one line naming each, the first found by errors.As
	// (an embedder's review, E2: errors.Join gave a line each, with
	// "lshdb: parameters differ" on each).
	_, err = Open("db", &Options{fs: fs, NumPerm: 128, Threshold: 0.5})
	me = nil
	if !errors.Is(err, ErrParamsMismatch) || !errors.As(err, &me) || me.Field != "Threshold" ||
		err.Error() != "lshdb: parameters differ from the database's: Threshold is 0.7 in the database, 0.5 was requested; NumPerm is 64 in the database, 128 was requested" {
		t.Errorf("two mismatches: %q (first %+v)", err, me)
	}
	// A list the database does not have is named as none, not as nothing.
	if _, err := Open("db", &Options{fs: fs, StopWords: []string{"a", "the"}}); err == nil || !strings.Contains(err.Error(), "StopWords is none in the database, a,the was requested") {
		t.Errorf("stop words: %v", err)
	}
	// Stop words are a set: their order and repeats are no change.
	sw := mustOpen(t, "sw", &Options{fs: fs, Shingle: minhash.ShingleWord, StopWords: []string{"the", "a", "the"}})
	sw.Close()
	for _, words := range [][]string{{"a", "the"}, {"the", "a"}, {"a", "a", "the"}} {
		if d, err := Open("sw", &Options{fs: fs, StopWords: words}); err != nil {
			t.Errorf("reopening with stop words %v: %v", words, err)
		} else {
			d.Close()
		}
	}
	if _, err := Open("sw", &Options{fs: fs, StopWords: []string{"a", "an"}}); !errors.Is(err, ErrParamsMismatch) {
		t.Errorf("reopening with other stop words: %v, want ErrParamsMismatch", err)
	}
	d := mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	if p := d.Params(); p.NumPerm != 64 || p.Threshold != 0.7 || !p.StoreText {
		t.Fatalf("stored params not taken: %+v", p)
	}
}

// Ensure that a database whose manifest has a newer format is refused, and
// that stored bytes that do not decode are reported as ErrCorrupt.
func TestErrFormatTooNewAndCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs})
	if err := d.Put(Doc{ID: "a", Text: "some text here"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	raw := func(fn func(p *pebble.DB)) {
		p, err := pebble.Open("db", &pebble.Options{FS: fs, Merger: compaction.Merger, FormatMajorVersion: formatMajorVersion})
		if err != nil {
			t.Fatal(err)
		}
		fn(p)
		p.Close()
	}
	// A corrupt doc record.
	raw(func(p *pebble.DB) { p.Set(codec.AppendDocKey(nil, 1), []byte{1, 0, 200}, pebble.Sync) })
	d = mustOpen(t, "db", &Options{fs: fs})
	if _, err := d.Get("a"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get of a corrupt record: %v", err)
	}
	if _, err := d.Query(context.Background(), "some text here", nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Query reaching a corrupt record: %v", err)
	}
	if rep, err := d.Check(context.Background()); err != nil || rep.OK() {
		t.Errorf("Check of a corrupt record: %v, %v", rep, err)
	}
	d.Close()
	// A newer format.
	raw(func(p *pebble.DB) {
		m, _ := codec.EncodeManifest(&codec.Manifest{FormatVersion: codec.MaxFormatVersion + 1})
		p.Set(codec.ManifestKey, m, pebble.Sync)
	})
	// NB: said once, with what to do (a compatibility review, C4).
	newer := codec.MaxFormatVersion + 1
	want := fmt.Sprintf("lshdb: database format is newer than this build: the index has format %d, and this build reads up to %d: open it with an lshdb that reads format %d", newer, codec.MaxFormatVersion, newer)
	if _, err := Open("db", &Options{fs: fs}); !errors.Is(err, ErrFormatTooNew) || !errors.Is(err, codec.ErrFormatTooNew) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("newer format: %v\nwant ErrFormatTooNew saying %q", err, want)
	}
}

// Ensure that a damaged SSTable surfaces as ErrCorrupt (Pebble's
// corruption classified), not as a bare Pebble error.
func TestErrCorruptSSTable(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	for i := range 200 {
		if err := d.Put(Doc{ID: string(rune('a'+i%26)) + strings.Repeat("x", i), Text: strings.Repeat("lorem ipsum dolor ", 1+i%7) + string(rune('a'+i%26))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no sstable")
	}
	for _, f := range ssts {
		b, _ := os.ReadFile(f)
		for i := 100; i < len(b)/2; i += 7 {
			b[i] ^= 0x5a
		}
		os.WriteFile(f, b, 0o644)
	}
	// NB: the log and the error carry one line: Pebble's details add its
	// stack traces and the message again on further lines.
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil))
	oneLine := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) || !pebble.IsCorruptionError(err) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %q, want ErrCorrupt, Pebble's corruption, one line", what, err)
		}
	}
	d, err := Open(dir, &Options{Logger: logger})
	if err != nil {
		oneLine("Open of a damaged store", err)
		return
	}
	defer d.Close()
	_, err = d.Check(context.Background())
	oneLine("Check of a damaged sstable", err)
	if n := strings.Count(log.String(), "\n"); n == 0 || strings.Contains(log.String(), "stack trace") {
		t.Errorf("the log of the corruption (%d lines): %s", n, log.String())
	}
}

// Ensure that bad documents and ids are refused with their sentinels and
// leave the stored data intact.
func TestErrBadInput(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), MaxDocBytes: 1000})
	defer d.Close()
	if err := d.Put(Doc{ID: "keep", Text: "a document that stays"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, text string
		want     error
	}{
		{"", "text", ErrInvalidID},
		{strings.Repeat("x", MaxIDBytes+1), "text", ErrInvalidID},
		{"bad\xff", "text", ErrInvalidID},
		{"e", "", ErrEmptyDocument},
		{"e", " \t\n ", ErrEmptyDocument},
		{"big", strings.Repeat("y", 1001), ErrDocTooLarge},
		{"keep", "", ErrEmptyDocument}, // a bad upsert leaves the old version
	} {
		if err := d.Put(Doc{ID: c.id, Text: c.text}, nil); !errors.Is(err, c.want) {
			t.Errorf("Put(%.20q, %.20q) = %v, want %v", c.id, c.text, err, c.want)
		}
	}
	if err := d.Delete("missing", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete(missing) = %v", err)
	}
	// In a batch, the missing one's position: the HTTP error had none.
	var de *DocError
	if _, err := d.DeleteIDs([]string{"keep", "missing"}, nil); !errors.Is(err, ErrNotFound) || !errors.As(err, &de) || de.Index != 1 || de.ID != "missing" {
		t.Errorf("DeleteIDs(keep, missing) = %v", err)
	}
	if ok, err := d.Has("keep"); !ok || err != nil {
		t.Errorf("a refused delete removed a document: %v", err)
	}
	if _, err := d.Query(context.Background(), "x", &QueryOptions{Threshold: 1.5}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("threshold 1.5: %v", err)
	}
	if _, err := d.Query(context.Background(), "x", &QueryOptions{Limit: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("limit -1: %v", err)
	}
	if _, err := d.Query(context.Background(), "  ", nil); !errors.Is(err, ErrEmptyDocument) {
		t.Errorf("empty query: %v", err)
	}
	// Explain names every missing id, not only the first (the shell
	// review's F11).
	for _, c := range []struct{ a, b, want string }{
		{"gone1", "gone2", `lshdb: document not found: neither "gone1" nor "gone2"`},
		{"keep", "gone2", `lshdb: document not found: "gone2"`},
		{"gone1", "keep", `lshdb: document not found: "gone1"`},
		{"gone1", "gone1", `lshdb: document not found: "gone1"`}, // NB: it said "neither "gone1" nor "gone1""
	} {
		if _, err := d.Explain(c.a, c.b); !errors.Is(err, ErrNotFound) || err.Error() != c.want {
			t.Errorf("Explain(%s, %s): %v, want %q", c.a, c.b, err, c.want)
		}
	}
	// An id no document can have is an invalid id, not a missing one.
	if _, err := d.Explain("keep", ""); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Explain(keep, \"\"): %v, want ErrInvalidID", err)
	}
	if _, err := d.HasIDs([]string{"keep", "bad\xff"}); !errors.Is(err, ErrInvalidID) || !strings.HasPrefix(err.Error(), `lshdb: document 1: invalid document id: "bad\xff" is not valid UTF-8`) {
		t.Errorf("HasIDs with an invalid second id: %v, want ErrInvalidID naming document 1", err)
	}
	if _, err := d.DeleteIDs([]string{"keep", ""}, nil); !errors.Is(err, ErrInvalidID) || !strings.HasPrefix(err.Error(), `lshdb: document 1 (id ""): invalid document id`) {
		t.Errorf("DeleteIDs with an empty second id: %v, want ErrInvalidID naming document 1", err)
	}
	if _, err := d.Has(""); !errors.Is(err, ErrInvalidID) || strings.Contains(err.Error(), "document 0") {
		t.Errorf("Has(\"\"): %v, want ErrInvalidID without a position", err)
	}
	if _, err := d.QuerySet(context.Background(), Set{}, nil); !errors.Is(err, ErrEmptyDocument) || !strings.Contains(err.Error(), "query set") {
		t.Errorf("QuerySet(Set{}): %v, want ErrEmptyDocument naming the query set", err)
	}
	// A nil sequence is a caller's mistake, not a panic.
	if _, err := d.Load(context.Background(), nil, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Load(nil): %v, want ErrInvalidOptions", err)
	}
	if _, err := d.ClustersFrom(context.Background(), nil, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ClustersFrom(nil): %v, want ErrInvalidOptions", err)
	}
	if _, err := Open("", nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Open(\"\"): %v, want ErrInvalidOptions", err)
	}
	doc, err := d.Get("keep")
	if err != nil || doc.ID != "keep" {
		t.Fatalf("stored document lost: %v", err)
	}
	if n, _ := d.Count(); n != 1 {
		t.Fatalf("Count = %d after refused writes", n)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", rep, err)
	}
}

// Ensure that every method of a closed DB returns ErrClosed.
func TestErrClosed(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem()})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Close":  d.Close(),
		"Put":    d.Put(Doc{ID: "a", Text: "b"}, nil),
		"Delete": d.Delete("a", nil),
		"Get":    func() error { _, err := d.Get("a"); return err }(),
		"Has":    func() error { _, err := d.Has("a"); return err }(),
		"HasIDs": func() error { _, err := d.HasIDs([]string{"a"}); return err }(),
		"Count":  func() error { _, err := d.Count(); return err }(),
		"Query":  func() error { _, err := d.Query(context.Background(), "a", nil); return err }(),
		"Check":  func() error { _, err := d.Check(context.Background()); return err }(),
		"All": func() error {
			for _, err := range d.All() {
				return err
			}
			return nil
		}(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// Ensure that a file, a directory of other files, and a Pebble store that
// is not an lshdb database are refused with ErrNotIndex, and a missing
// database with MustExist is ErrNotExist; none of them is modified.
func TestErrNotIndex(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("hello"), 0o644)
	if _, err := Open(file, nil); !errors.Is(err, ErrNotIndex) {
		t.Errorf("a file: %v", err)
	}
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		if _, err := Open(filepath.Join(file, "sub"), o); !errors.Is(err, ErrNotIndex) {
			t.Errorf("a path through a file (%+v): %v", o, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello" {
		t.Errorf("the file: %q, %v", b, err)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644)
	if _, err := Open(other, nil); !errors.Is(err, ErrNotIndex) {
		t.Errorf("a directory of other files: %v", err)
	}
	if names, _ := os.ReadDir(other); len(names) != 1 {
		t.Errorf("the directory was modified: %v", names)
	}
	plain := filepath.Join(dir, "pebble")
	p, err := pebble.Open(plain, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Set([]byte("k"), []byte("v"), pebble.Sync)
	p.Close()
	if _, err := Open(plain, nil); !errors.Is(err, ErrNotIndex) {
		t.Errorf("a plain Pebble store: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing"), &Options{MustExist: true}); !errors.Is(err, ErrNotExist) {
		t.Errorf("MustExist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("MustExist created the directory")
	}
	if _, err := Open(dir, &Options{Threshold: 2}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("threshold 2: %v", err)
	}
}

// Ensure that a read-only handle reads and refuses writes.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	d.Put(Doc{ID: "a", Text: "alpha beta gamma"}, nil)
	d.Close()
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	if _, err := ro.Get("a"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Put(Doc{ID: "b", Text: "x y z"}, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Put on read-only: %v", err)
	}
}

// Ensure that an Open that fails to create a database leaves no directory
// behind, and that an Open that must not create never finishes a store a
// failed create left in an existing directory (reviews C9, C26, R16).
func TestFailedCreateLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	if _, err := Open(dir, &Options{Threshold: 0.01}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with an unreachable banding: %v, want ErrInvalidOptions", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed create left %s behind: %v", dir, err)
	}
	// An existing empty directory is the caller's: a failed create leaves
	// it, with a Pebble store but no manifest.
	existing := t.TempDir()
	if _, err := Open(existing, &Options{Threshold: 0.01}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with an unreachable banding: %v, want ErrInvalidOptions", err)
	}
	for _, o := range []*Options{{MustExist: true}, {ReadOnly: true}} {
		if _, err := Open(existing, o); !errors.Is(err, ErrNotExist) {
			t.Fatalf("Open(%+v) of a half-made store: %v, want ErrNotExist", *o, err)
		}
	}
	d := mustOpen(t, existing, &Options{Threshold: 0.7}) // a creating Open finishes it
	defer d.Close()
	if got := d.Params().Threshold; got != 0.7 {
		t.Fatalf("threshold %v, want 0.7", got)
	}
}

// Ensure that Options.MemTableSize is checked before anything is created,
// defaults to DefaultMemTableSize, and sizes Pebble's memtables (the same
// writes flush a 1 MiB memtable several times and the default one never)
// and the default DiskReserve.
func TestMemTableSize(t *testing.T) {
	for _, size := range []int64{-1, 1, 1<<20 - 1, 1<<30 + 1} {
		dir := filepath.Join(t.TempDir(), "idx")
		if _, err := Open(dir, &Options{MemTableSize: size}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MemTableSize %d: %v, want ErrInvalidOptions", size, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("MemTableSize %d: the refused Open made %s", size, dir)
		}
	}
	// flushes writes ~3 MB and returns the flushes it has led to once at
	// least `least` of them have finished (10 s at most: a flush runs in
	// the background, after the write that fills its memtable returns).
	flushes := func(opts *Options, least int64) int64 {
		d := mustOpen(t, t.TempDir(), opts)
		defer d.Close()
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range 3 {
			docs := make([]Doc, 100)
			for j := range docs {
				w := make([]string, 800)
				for k := range w {
					w[k] = strconv.FormatUint(rng.Uint64(), 36)
				}
				docs[j] = Doc{ID: fmt.Sprintf("d%d-%d", i, j), Text: strings.Join(w, " ")}
			}
			if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
		}
		if want := cmp.Or(opts.MemTableSize, DefaultMemTableSize); d.popts.MemTableSize != uint64(want) {
			t.Errorf("Pebble's MemTableSize %d, want %d", d.popts.MemTableSize, want)
		}
		for deadline := time.Now().Add(10 * time.Second); d.pdb.Metrics().Flush.Count < least && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		return d.pdb.Metrics().Flush.Count
	}
	// The default disk reserve covers four memtables. NB: in memory:
	// 64 MiB memtables preallocate a 70 MiB log.
	for _, c := range []struct{ mem, reserve int64 }{{0, DefaultDiskReserve}, {1 << 20, DefaultDiskReserve}, {64 << 20, 256 << 20}} {
		d := mustOpen(t, "idx", &Options{fs: vfs.NewMem(), MemTableSize: c.mem})
		if d.opts.DiskReserve != c.reserve {
			t.Errorf("MemTableSize %d: DiskReserve %d, want %d", c.mem, d.opts.DiskReserve, c.reserve)
		}
		d.Close()
	}
	small := flushes(&Options{MemTableSize: 1 << 20}, 2)
	if small < 2 {
		t.Errorf("~3 MB written through 1 MiB memtables: %d flushes", small)
	}
	if n := flushes(&Options{}, 0); n >= small {
		t.Errorf("~3 MB written through the default memtables: %d flushes, as many as through 1 MiB ones", n)
	}
}

// Ensure that PutBatch's error names the failing document by its position
// in the caller's slice when ids repeat (the embedder's review: it counted
// in the list left after the repeats were dropped, "document 2" for the
// fourth document, and no position at all when one document was left).
func TestPutBatchNamesTheCallersPosition(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	for _, tc := range []struct {
		docs []Doc
		want error
		pos  string
	}{
		{[]Doc{{ID: "a", Text: "first version of a"}, {ID: "a", Text: "second version of a"}, {ID: "b", Text: "fine text"}, {ID: "c", Text: "   "}}, ErrEmptyDocument, `lshdb: document 3: document has no shingles: "c"`},
		{[]Doc{{ID: "a", Text: "   "}, {ID: "b", Text: "fine text"}, {ID: "b", Text: "fine text again"}}, ErrEmptyDocument, `lshdb: document 0: document has no shingles: "a"`},
		// NB: the first of the two: every copy of an id is checked, as
		// Put of each in turn would (only the last one was).
		{[]Doc{{ID: ""}, {ID: ""}}, ErrInvalidID, `lshdb: document 0 (id ""): invalid document id`},
	} {
		_, err := d.PutBatch(tc.docs, nil)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.pos) {
			t.Errorf("PutBatch(%d documents): %v, want %v at %q", len(tc.docs), err, tc.want, tc.pos)
		}
		// The position as a value, for a caller that acts on it.
		var de *DocError
		if !errors.As(err, &de) || "lshdb: document "+strconv.Itoa(de.Index) != tc.pos[:len("lshdb: document ")+1] || de.ID != tc.docs[de.Index].ID {
			t.Errorf("PutBatch(%d documents): %v: DocError %+v, want the position of %q", len(tc.docs), err, de, tc.pos)
		}
	}
	// With SkipEmpty and repeats, the first failing document too, as Load
	// names it (the last one was named).
	d2 := mustOpen(t, t.TempDir(), &Options{NoSync: true, MaxDocBytes: 100})
	defer d2.Close()
	big := strings.Repeat("x ", 100)
	docs := []Doc{{ID: "x", Text: big}, {ID: "a", Text: "fine text"}, {ID: "a", Text: "fine text again"}, {ID: "z", Text: big}}
	_, lerr := d2.Load(context.Background(), seqOf(docs), &LoadOptions{SkipEmpty: true})
	_, perr := d2.PutBatch(docs, &WriteOptions{SkipEmpty: true})
	var lde, pde *DocError
	if !errors.As(lerr, &lde) || !errors.As(perr, &pde) || lde.Index != 0 || pde.Index != 0 {
		t.Errorf("with SkipEmpty and repeats: Load %v, PutBatch %v; want both to name document 0", lerr, perr)
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("count %d %v: a failed batch stored something", n, err)
	}
}

// lockDeniedFS is a filesystem whose lock file cannot be opened, as an
// index directory the user may read but not write.
type lockDeniedFS struct{ vfs.FS }

func (f lockDeniedFS) Lock(name string) (io.Closer, error) {
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
}

// Ensure that an index whose lock file cannot be opened (no write
// permission) is not reported as locked by another process, which no
// process was: the error names the permission and the lock file.
func TestOpenLockFileDenied(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("idx", &Options{fs: mem})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err = Open("idx", &Options{fs: lockDeniedFS{mem}, ReadOnly: true})
	if err == nil || errors.Is(err, ErrLocked) || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "LOCK") {
		t.Fatalf("Open with the lock file denied: %v, want a permission error naming the lock file, not ErrLocked", err)
	}
}

// readOnlyFS refuses every write under root with EROFS, as a read-only
// mount does (the rest of the filesystem, a temporary directory, stays
// writable).
type readOnlyFS struct {
	vfs.FS
	root string
}

func (f readOnlyFS) ro(name string) bool { return strings.HasPrefix(name, f.root) }

func erofs(op, name string) error { return &os.PathError{Op: op, Path: name, Err: syscall.EROFS} }

func (f readOnlyFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.ro(name) {
		return nil, erofs("open", name)
	}
	return f.FS.Create(name, c)
}
func (f readOnlyFS) Link(o, n string) error {
	if f.ro(n) {
		return erofs("link", n)
	}
	return f.FS.Link(o, n)
}
func (f readOnlyFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if f.ro(name) {
		return nil, erofs("open", name)
	}
	return f.FS.OpenReadWrite(name, c, opts...)
}
func (f readOnlyFS) Remove(name string) error {
	if f.ro(name) {
		return erofs("remove", name)
	}
	return f.FS.Remove(name)
}
func (f readOnlyFS) RemoveAll(name string) error {
	if f.ro(name) {
		return erofs("remove", name)
	}
	return f.FS.RemoveAll(name)
}
func (f readOnlyFS) Rename(o, n string) error {
	if f.ro(n) || f.ro(o) {
		return erofs("rename", n)
	}
	return f.FS.Rename(o, n)
}
func (f readOnlyFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.ro(n) {
		return nil, erofs("open", n)
	}
	return f.FS.ReuseForWrite(o, n, c)
}
func (f readOnlyFS) MkdirAll(dir string, perm os.FileMode) error {
	if f.ro(dir) {
		return erofs("mkdir", dir)
	}
	return f.FS.MkdirAll(dir, perm)
}
func (f readOnlyFS) Lock(name string) (io.Closer, error) {
	if f.ro(name) {
		return nil, erofs("open", name)
	}
	return f.FS.Lock(name)
}

// Ensure that an index on a read-only filesystem (a backup on read-only
// media) opens read-only and answers, as the index it was: the lock file
// it cannot make is no writer to exclude; pairs spills elsewhere. A
// writable open is refused.
func TestOpenOnReadOnlyFilesystem(t *testing.T) {
	mem := vfs.NewMem()
	d, err := Open("idx", &Options{fs: mem})
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, {ID: "b", Text: "the quick brown fox jumps over the lazy dog!"}, {ID: "c", Text: "something else entirely, about the weather"}}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ro := readOnlyFS{mem, "idx"}
	d, err = Open("idx", &Options{fs: ro, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open on a read-only filesystem: %v", err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3", n, err)
	}
	res, err := d.QueryID(context.Background(), "a", nil)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "b" {
		t.Fatalf("QueryID(a) = %+v, %v; want b", res, err)
	}
	// NB: pairs spills in the system's temporary directory instead.
	var pairs []Pair
	for p, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatalf("Pairs on a read-only filesystem: %v", err)
		}
		pairs = append(pairs, p)
	}
	if len(pairs) != 1 || pairs[0].A != "a" || pairs[0].B != "b" {
		t.Fatalf("Pairs = %v, want (a, b)", pairs)
	}
	if _, err := Open("idx", &Options{fs: ro}); !errors.Is(err, syscall.EROFS) || !errors.Is(err, ErrReadOnly) {
		t.Fatalf("writable Open on a read-only filesystem: %v, want ErrReadOnly and EROFS", err)
	}
	// NB: a new index there too: its directory's creation matched no
	// sentinel (an embedder's review, D2).
	if _, err := Open(mem.PathJoin("idx", "new"), &Options{fs: ro}); !errors.Is(err, syscall.EROFS) || !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "no index can be made there") {
		t.Fatalf("creating Open on a read-only filesystem: %v, want ErrReadOnly and EROFS", err)
	}
	// A backup holds no LOCK file: on read-only media it opens with none
	// (it was taken for a directory removed while the open waited).
	d.Close()
	if err := mem.Remove(mem.PathJoin("idx", "LOCK")); err != nil {
		t.Fatal(err)
	}
	d2, err := Open("idx", &Options{fs: ro, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of an index without a LOCK file on a read-only filesystem: %v", err)
	}
	d2.Close()
}

// pairOfTwoInTmp sets $TMPDIR to a new directory tmp and makes a closed
// index in dir whose two documents, a and b, are a pair.
func pairOfTwoInTmp(t *testing.T) (tmp, dir string) {
	t.Helper()
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir = filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	docs := []Doc{{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, {ID: "b", Text: "the quick brown fox jumps over the lazy dog!"}}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return tmp, dir
}

// Ensure that pairs on an index it cannot write spills in the system's
// temporary directory and sweeps there what dead runs left (a kill -9
// during a nightly pairs on a read-only backup), as it does beside a
// writable index: a dead run's directory goes, a live one's stays.
func TestPairsOnReadOnlyFilesystemSweepsTempDir(t *testing.T) {
	tmp, dir := pairOfTwoInTmp(t)
	old := time.Now().Add(-2 * staleRunAge)
	dead, live := filepath.Join(tmp, "lshdb-pairs-4242-1.tmp"), filepath.Join(tmp, "lshdb-pairs-4242-2.tmp")
	for _, p := range []string{dead, live} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+"/sets", make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := vfs.Default.Lock(live + "/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	for _, p := range []string{dead, live} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(dir, &Options{fs: readOnlyFS{vfs.Default, dir}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := collectPairs(t, d, nil); len(got) != 1 {
		t.Fatalf("pairs = %v, want (a, b)", got)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead run's directory in the temporary directory: %v, want it removed", err)
	}
	if _, err := os.Stat(live + "/sets"); err != nil {
		t.Errorf("a live run's directory: %v, want it kept", err)
	}
	names, _ := os.ReadDir(tmp)
	if len(names) != 1 {
		t.Errorf("temporary directory holds %v, want only the live run's", names)
	}
}

// Ensure that an index whose store's manifest file is gone (deleted, a
// copy that missed it) is refused as damaged (ErrCorrupt), which the
// command answers with its advice to restore a backup, not with
// Pebble's raw error; and the same on a read-only open.
func TestOpenWithoutManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document in an index about to lose its manifest"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no manifest file in %s: %v", dir, err)
	}
	for _, m := range manifests {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		if _, err := Open(dir, o); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "manifest is missing") {
			t.Errorf("Open(%+v) without the manifest: %v, want ErrCorrupt saying the manifest is missing", o, err)
		}
	}
}

// Ensure that a store of a newer Pebble format (what a newer lshdb that
// raised it writes; here its format marker renamed to say 99) is refused
// as ErrFormat, read-only or not, naming what to do, with its files as
// they were: it was Pebble's error alone (exit 1: a format review, FM-6).
func TestOpenNewerStoreFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document of an index a newer lshdb wrote"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	markers, err := filepath.Glob(filepath.Join(dir, "marker.format-version.*"))
	if err != nil || len(markers) != 1 {
		t.Fatalf("format markers in %s: %v, %v", dir, markers, err)
	}
	// NB: marker.format-version.<iteration>.<version>
	if err := os.Rename(markers[0], filepath.Join(dir, "marker.format-version.999999.099")); err != nil {
		t.Fatal(err)
	}
	before := dirListing(t, dir)
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		if _, err := Open(dir, o); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "newer lshdb") {
			t.Errorf("Open(%+v) of a newer store format: %v, want ErrFormat naming a newer lshdb", o, err)
		}
	}
	if after := dirListing(t, dir); after != before {
		t.Errorf("the refused opens changed the files:\n%s\nthen\n%s", before, after)
	}
}

// Ensure that Open of an index whose marker of its current manifest was
// deleted (its manifest and tables there) fails with ErrCorrupt, read-only
// or not, and writes nothing: Pebble said "database does not exist" to a
// reader and "not pristine" to a writer, after writing a marker of its own.
func TestOpenWithoutManifestMarker(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document in an index about to lose its marker"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	markers, _ := filepath.Glob(filepath.Join(dir, "marker.*"))
	if len(markers) == 0 {
		t.Fatalf("no marker in %s", dir)
	}
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadDir(dir)
	for _, o := range []*Options{{ReadOnly: true}, nil} {
		if _, err := Open(dir, o); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "marker") {
			t.Errorf("Open(%+v) without the marker: %v, want ErrCorrupt naming the marker", o, err)
		}
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("a refused Open changed the directory: %d entries, were %d", len(after), len(before))
	}
}

// Ensure that Open of an index one of whose table files was truncated or
// deleted (Pebble's consistency check at Open) fails with ErrCorrupt,
// naming the file, read-only or not, and leaves the files as they were
// (it matched no sentinel).
func TestOpenWithDamagedTable(t *testing.T) {
	for _, damage := range []string{"truncated", "deleted"} {
		t.Run(damage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			d := mustOpen(t, dir, nil)
			if err := d.Put(Doc{ID: "a", Text: "a document in an index about to lose a table"}, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
			if err != nil || len(tables) == 0 {
				t.Fatalf("no table file in %s: %v", dir, err)
			}
			if damage == "truncated" {
				err = os.Truncate(tables[0], 100)
			} else {
				err = os.Remove(tables[0])
			}
			if err != nil {
				t.Fatal(err)
			}
			before := dirListing(t, dir)
			name := strings.TrimSuffix(filepath.Base(tables[0]), ".sst")
			for _, o := range []*Options{nil, {ReadOnly: true}} {
				_, err := Open(dir, o)
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "missing or truncated") || !strings.Contains(err.Error(), name) {
					t.Errorf("Open(%+v) with table %s %s: %v, want ErrCorrupt naming it", o, name, damage, err)
				}
			}
			if after := dirListing(t, dir); after != before {
				t.Errorf("Open changed the directory:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// dirListing is the names and sizes of the files in dir.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d ", e.Name(), fi.Size())
	}
	return b.String()
}

// Ensure that Put, PutSet and PutSignature of an empty document fail with
// ErrEmptyDocument with WriteOptions.SkipEmpty too, leaving the stored
// version (it returned nil and left the old text, unseen), while PutBatch
// skips and lists it; and that an ExpirySweep under 10 ms (a bare number
// meant as seconds) is refused.
func TestSingleWritesDoNotSkip(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "e", Text: "a stored text to keep"}, nil); err != nil {
		t.Fatal(err)
	}
	skip := &WriteOptions{SkipEmpty: true}
	if err := d.Put(Doc{ID: "e", Text: ""}, skip); !errors.Is(err, ErrEmptyDocument) {
		t.Fatalf("Put of an empty text with SkipEmpty: %v, want ErrEmptyDocument", err)
	}
	if err := d.PutSet("e", Tokens(), skip); !errors.Is(err, ErrEmptyDocument) && !errors.Is(err, ErrStorageMode) {
		t.Fatalf("PutSet of an empty set with SkipEmpty: %v", err)
	}
	if got, err := d.Get("e"); err != nil || got.Text != "a stored text to keep" {
		t.Fatalf("after the refused puts: %q, %v", got.Text, err)
	}
	if !skip.SkipEmpty {
		t.Fatal("Put changed the caller's WriteOptions")
	}
	res, err := d.PutBatch([]Doc{{ID: "e", Text: ""}, {ID: "f", Text: "another text"}}, skip)
	if err != nil || !slices.Equal(res.SkippedEmpty, []string{"e"}) || res.Stored != 1 {
		t.Fatalf("PutBatch with SkipEmpty: %+v, %v", res, err)
	}
	for _, every := range []time.Duration{1, time.Millisecond, 9 * time.Millisecond} {
		if _, err := Open(filepath.Join(t.TempDir(), "x"), &Options{ExpirySweep: every}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("ExpirySweep %v: %v, want ErrInvalidOptions", every, err)
		}
	}
}

// Ensure that a document refused for its set or signature is named once,
// after its sentinel, with one "lshdb: " (it read "lshdb: document 0:
// "l": lshdb: invalid document: …").
func TestIDErrorMessage(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Scheme: minhash.SchemeDatasketch})
	defer d.Close()
	_, err := d.PutBatch([]Doc{{ID: "l", Set: Hashes(1 << 40)}}, nil)
	if !errors.Is(err, ErrInvalidDoc) || strings.Count(err.Error(), "lshdb: ") != 1 || !strings.Contains(err.Error(), `invalid document: "l": `) {
		t.Fatalf("%v; want ErrInvalidDoc, one lshdb: prefix, the id after the sentinel", err)
	}
}

// Ensure that the limiter of Pebble's background errors says the first of
// a kind, holds back the same error (numbers aside: a failed flush names
// a new table each time) for its interval while counting it, and says it
// again after with the count; another error is said at once. A full disk
// under --disk-reserve -1 logged about a hundred lines a second.
func TestRepeatLimiter(t *testing.T) {
	r := &repeatLimiter{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	type step struct {
		msg      string
		at       time.Duration
		ok       bool
		repeated int
	}
	for i, s := range []step{
		{"write 000123.sst: no space left on device", 0, true, 0},
		{"write 000124.sst: no space left on device", time.Second, false, 0},
		{"write 000125.sst: no space left on device", 2 * time.Second, false, 0},
		{"read 000007.sst: checksum mismatch", 3 * time.Second, true, 0},
		{"write 000126.sst: no space left on device", 9 * time.Second, false, 0},
		{"write 000127.sst: no space left on device", 10 * time.Second, true, 3},
		{"write 000128.sst: no space left on device", 11 * time.Second, false, 0},
		{"write 000129.sst: no space left on device", 25 * time.Second, true, 1},
	} {
		ok, n := r.allow(s.msg, t0.Add(s.at))
		if ok != s.ok || n != s.repeated {
			t.Errorf("step %d (%q at %v): %v, %d; want %v, %d", i, s.msg, s.at, ok, n, s.ok, s.repeated)
		}
	}
}

// Ensure that HasIDsContext stops when its context ends (context.Canceled)
// and when the database closes (ErrClosed), and otherwise answers as
// HasIDs: a server's has of millions of ids ran on after its client had
// gone, and held up the server's shutdown. Both backends.
func TestHasIDsContext(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			if backend == "redis" {
				dir = redisURL(t)
			}
			d := mustOpen(t, dir, nil)
			defer d.Close()
			if _, err := d.PutBatch([]Doc{{ID: "a", Text: "the first document"}, {ID: "c", Text: "the third document"}}, nil); err != nil {
				t.Fatal(err)
			}
			ids := make([]string, 5000)
			for i := range ids {
				ids[i] = []string{"a", "b", "c"}[i%3]
			}
			got, err := d.HasIDsContext(context.Background(), ids)
			want, werr := d.HasIDs(ids)
			if err != nil || werr != nil || !slices.Equal(got, want) || !got[0] || got[1] || !got[2] {
				t.Fatalf("HasIDsContext: %v, %v; HasIDs %v", err, got[:3], werr)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := d.HasIDsContext(ctx, ids); !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled context: %v, want context.Canceled", err)
			}
			d.Close()
			if _, err := d.HasIDsContext(context.Background(), ids); !errors.Is(err, ErrClosed) {
				t.Errorf("a closed database: %v, want ErrClosed", err)
			}
		})
	}
}

// TestOpenRefusesBandingPastTheSignature: a banding whose Bands·Rows
// overflows an int was accepted (the product wrapped to a negative
// number), stored in the manifest, and every Put then panicked in a
// worker goroutine, killing the process.
func TestOpenRefusesBandingPastTheSignature(t *testing.T) {
	for _, o := range []Options{
		{Bands: 2, Rows: math.MaxInt/2 + 1},
		{Bands: 3, Rows: 43}, // 129 rows of 128
	} {
		fs := vfs.NewMem()
		o.fs = fs
		d, err := Open("db", &o)
		if err == nil {
			d.Close()
			t.Fatalf("Open with %d bands of %d rows: accepted", o.Bands, o.Rows)
		}
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open with %d bands of %d rows: %v, want ErrInvalidOptions", o.Bands, o.Rows, err)
		}
		if names, _ := fs.List("db"); len(names) != 0 {
			t.Errorf("Open with %d bands of %d rows left %v", o.Bands, o.Rows, names)
		}
	}
}

// TestDamagedMergeOperand: a posting operand that does not decode, left in
// the log (as a bug or a memory error could write it). Every writable open
// hung for ever: the merger failed the flush that replays the log, and
// Pebble retried it hundreds of thousands of times a second. The merger
// now gives a damaged list, which the flush writes and every read of the
// list reports as ErrCorrupt, naming its key; Check finds it.
func TestDamagedMergeOperand(t *testing.T) {
	fs, d := twoDocIndex(t)
	d.Close()
	p := rawStore(t, fs, "db")
	// The first posting list stored, and the list of a bucket no one holds.
	var damaged []byte
	it, err := p.NewIter(&pebble.IterOptions{LowerBound: []byte{codec.PrefixPosting}, UpperBound: []byte{codec.PrefixPosting + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		damaged = slices.Clone(it.Key())
	}
	it.Close()
	if damaged == nil {
		t.Fatal("no posting list stored")
	}
	for _, k := range [][]byte{damaged, codec.AppendPostingKey(nil, 3, 12345)} {
		if err := p.Merge(k, []byte{0xff, 0xff, 0xff}, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	// NB: closed without a flush: the operands are only in the log.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		d, err := Open("db", &Options{fs: fs})
		if err == nil {
			defer d.Close()
			err = damagedReads(d, damaged)
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Open of an index with a damaged merge operand in its log did not return in a minute")
	}
}

// damagedReads checks that d reports the damaged posting list key on every
// path that reads it, after a flush and a compaction as before.
func damagedReads(d *DB, key []byte) error {
	ctx := context.Background()
	for round := range 2 {
		var errs []error
		rep, err := d.Check(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("Check: %w", err))
		} else if rep.OK() || !strings.Contains(fmt.Sprint(rep.Problems), "damaged") {
			errs = append(errs, fmt.Errorf("Check: %v, want the damaged list", rep.Problems))
		}
		for _, err := range d.Pairs(ctx, nil) {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), fmt.Sprintf("%x", key)) {
				errs = append(errs, fmt.Errorf("Pairs: %v, want ErrCorrupt naming list %x", err, key))
			}
			break
		}
		if len(errs) > 0 {
			return fmt.Errorf("round %d: %w", round, errors.Join(errs...))
		}
		if round == 0 {
			if err := d.Compact(ctx); err != nil {
				return fmt.Errorf("Compact: %w", err)
			}
		}
	}
	return nil
}

// TestDamagedIDAndCounters: an id record that names another document's
// number, and a store without its counters record, are ErrCorrupt. Get of
// the first answered with the other document; the second's Open said
// "reading counters: pebble: not found".
func TestDamagedIDAndCounters(t *testing.T) {
	fs, d := twoDocIndex(t)
	b, err := d.Get("b")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	raw := func(fn func(p *pebble.DB) error) {
		t.Helper()
		p := rawStore(t, fs, "db")
		if err := fn(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	raw(func(p *pebble.DB) error {
		return p.Set(codec.AppendIDKey(nil, "a"), codec.EncodeDocNum(b.Num), pebble.Sync)
	})
	d = mustOpen(t, "db", &Options{fs: fs})
	if got, err := d.Get("a"); !errors.Is(err, ErrCorrupt) || !strings.Contains(fmt.Sprint(err), `whose record is of "b"`) {
		t.Errorf("Get(a) with a's id record naming b's doc: %+v, %v; want ErrCorrupt", got, err)
	}
	// NB: writes of a: a put or delete removed b.
	if err := d.Put(Doc{ID: "a", Text: "a new version of a"}, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Put(a) with a's id record naming b's doc: %v, want ErrCorrupt", err)
	}
	if err := d.Delete("a", nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Delete(a) with a's id record naming b's doc: %v, want ErrCorrupt", err)
	}
	if got, err := d.Get("b"); err != nil || got.ID != "b" {
		t.Errorf("Get(b): %+v, %v", got, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || rep.OK() {
		t.Errorf("Check: %v, %v; want problems", rep.Problems, err)
	}
	d.Close()
	raw(func(p *pebble.DB) error { return p.Delete(codec.CountersKey, pebble.Sync) })
	for _, ro := range []bool{false, true} {
		if _, err := Open("db", &Options{fs: fs, ReadOnly: ro}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "counters record is missing") {
			t.Errorf("Open (read-only %v) without the counters record: %v, want ErrCorrupt", ro, err)
		}
	}
}

// Ensure that every method that takes a context takes a nil one for none,
// with the answer it gives under context.Background(): Scan, Stats and
// Clusters panicked on one (a nil pointer), and after a recovered panic
// of Scan's, Close waited for ever. The oracle: the same calls under
// context.Background().
func TestNilContext(t *testing.T) {
	var none context.Context // nil: what this test is about (a literal nil is what staticcheck flags)
	d := mustOpen(t, t.TempDir(), nil)
	for i := range 6 {
		text := "the quick brown fox jumps over the lazy dog, a text to match"
		if i%2 == 1 {
			text += fmt.Sprint(" again ", i)
		}
		if err := d.Put(Doc{ID: fmt.Sprint("d", i), Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ctx context.Context) []string {
		var out []string
		for doc, err := range d.Scan(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, doc.ID)
		}
		return out
	}
	pairs := func(ctx context.Context) []Pair {
		var out []Pair
		for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return out
	}
	bg := context.Background()
	if got, want := ids(none), ids(bg); !slices.Equal(got, want) || len(want) != 6 {
		t.Errorf("Scan(nil): %v, want %v", got, want)
	}
	if got, want := pairs(none), pairs(bg); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("Pairs(nil): %v, want %v", got, want)
	}
	st, err := d.Stats(none, 3)
	if err != nil || st.Buckets == nil {
		t.Errorf("Stats(nil): %v", err)
	}
	cl, err := d.Clusters(none, &PairsOptions{Threshold: 0.5})
	want, _ := d.Clusters(bg, &PairsOptions{Threshold: 0.5})
	if err != nil || len(cl) != len(want) || len(want) == 0 {
		t.Errorf("Clusters(nil): %v %v, want %v", cl, err, want)
	}
	cl, err = d.ClustersFrom(none, func(yield func(Pair, error) bool) {
		for _, p := range pairs(bg) {
			if !yield(p, nil) {
				return
			}
		}
	}, &PairsOptions{Threshold: 0.5})
	if err != nil || len(cl) != len(want) {
		t.Errorf("ClustersFrom(nil): %v %v, want %v", cl, err, want)
	}
	if rep, err := d.Check(none); err != nil || !rep.OK() {
		t.Errorf("Check(nil): %v", err)
	}
	if _, err := d.Buckets(none, -1, 3); err != nil {
		t.Errorf("Buckets(nil): %v", err)
	}
	if res, err := d.QueryID(none, "d0", nil); err != nil || len(res.Matches) == 0 {
		t.Errorf("QueryID(nil): %v", err)
	}
	if _, err := d.HasIDsContext(none, []string{"d0"}); err != nil {
		t.Errorf("HasIDsContext(nil): %v", err)
	}
	if _, err := d.SweepExpired(none); err != nil {
		t.Errorf("SweepExpired(nil): %v", err)
	}
	if _, err := d.Repair(none); err != nil {
		t.Errorf("Repair(nil): %v", err)
	}
	if err := d.Compact(none); err != nil {
		t.Errorf("Compact(nil): %v", err)
	}
	// NB: WithProgress panicked in context.WithValue (an API review's A1).
	reported := 0
	if _, err := d.Check(WithProgress(none, func(Progress) { reported++ })); err != nil || reported == 0 {
		t.Errorf("Check(WithProgress(nil, fn)): %v, %d reports", err, reported)
	}
	done := make(chan error, 1)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// Ensure that an error shows at most the first 64 bytes of an id (and its
// length), cut at a character's start: ids of up to 4 KiB were quoted
// whole in ErrNotFound and ErrInvalidID, and a service that logs its
// clients' errors logged them whole. The oracle: the errors' sentinels,
// and the id's first bytes, worked out by hand.
func TestErrorsCutLongIDs(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	long := strings.Repeat("y", 60) + strings.Repeat("é", 2000) // 4,060 bytes: é is 2
	shown := `"` + strings.Repeat("y", 60) + `éé"… (4060 bytes)`
	invalid := strings.Repeat("z", 100) + "\xff"
	for _, c := range []struct {
		name string
		err  error
		is   error
		want string
	}{
		{"Delete", d.Delete(long, nil), ErrNotFound, shown},
		{"Get", func() error { _, err := d.Get(long); return err }(), ErrNotFound, shown},
		{"QueryID", func() error { _, err := d.QueryID(context.Background(), long, nil); return err }(), ErrNotFound, shown},
		{"Put invalid", d.Put(Doc{ID: invalid, Text: "some text to index"}, nil), ErrInvalidID, `"` + strings.Repeat("z", 64) + `"… (101 bytes)`},
		{"PutBatch", func() error {
			_, err := d.PutBatch([]Doc{{ID: "ok", Text: "some text"}, {ID: long, Text: " "}}, nil)
			return err
		}(), ErrEmptyDocument, shown},
	} {
		msg := fmt.Sprint(c.err)
		if !errors.Is(c.err, c.is) || !strings.Contains(msg, c.want) || len(msg) > 300 {
			t.Errorf("%s: %q (%d bytes), want %v showing %s", c.name, msg, len(msg), c.is, c.want)
		}
	}
}

// Ensure that a URL that is no index is refused with ErrInvalidOptions,
// creating nothing, and that a server's http(s) address says how a served
// index is reached (it listed Redis URLs only).
func TestOpenURLNotIndex(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:7070", "--addr http://127.0.0.1:7070"},
		{"HTTPS://example.com/idx", "db/client"},
		{"ftp://host/idx", "redis://HOST:PORT/NAME"},
	} {
		d, err := Open(c.url, nil)
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q): %v; want ErrInvalidOptions saying %q", c.url, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the refused opens made %v", ents)
	}
}

// Ensure that a caller's sequence that goes on yielding after it was told
// to stop (yield returned false) gets the call's error, not a panic on
// the caller's goroutine ("range function continued iteration", an API
// review's A2): Load stopped by a bad first document, ClustersFrom and
// BestPairs stopped by an error in the sequence. The oracle: the errors
// the same calls give on a well-behaved sequence, and the stored
// documents, unchanged.
func TestCallerSeqThatIgnoresStop(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "kept", Text: "a document stored before the bad load"}, nil); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("the sequence's own error")
	// rude yields n documents (the first with an empty id, or after an
	// error), whatever yield returns.
	rude := func(first error) iter.Seq2[Doc, error] {
		return func(yield func(Doc, error) bool) {
			if first != nil {
				yield(Doc{}, first)
			}
			for i := range 3000 {
				id := fmt.Sprint("L", i)
				if i == 0 && first == nil {
					id = ""
				}
				yield(Doc{ID: id, Text: "a loaded document, number " + id}, nil)
			}
		}
	}
	call := func(name string, f func() error) error {
		t.Helper()
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", name, r)
				}
			}()
			err = f()
		}()
		return err
	}
	if err := call("Load", func() error { _, err := d.Load(context.Background(), rude(nil), nil); return err }); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Load of a bad first document: %v, want ErrInvalidID", err)
	}
	if err := call("Load", func() error { _, err := d.Load(context.Background(), rude(stop), nil); return err }); !errors.Is(err, stop) {
		t.Errorf("Load of a failing sequence: %v, want its error", err)
	}
	rudePairs := func(yield func(Pair, error) bool) {
		yield(Pair{}, stop)
		for range 100 {
			yield(Pair{A: "kept", B: "kept", Jaccard: 1}, nil)
		}
	}
	if err := call("ClustersFrom", func() error { _, err := d.ClustersFrom(context.Background(), rudePairs, nil); return err }); !errors.Is(err, stop) {
		t.Errorf("ClustersFrom of a failing sequence: %v, want its error", err)
	}
	if err := call("BestPairs", func() error {
		for _, err := range BestPairs(rudePairs, 3) {
			if err != nil {
				return err
			}
		}
		return nil
	}); !errors.Is(err, stop) {
		t.Errorf("BestPairs of a failing sequence: %v, want its error", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 1 {
		t.Errorf("after the refused loads: %d documents, %v; want the 1 stored before", n, err)
	}
}

// TestClassifySaysLshdbOnce: an error classified as a sentinel says
// "lshdb: " once ("lshdb: disk full: lshdb: backup to ..." said it twice:
// an embedder's review, D3), and still matches the cause.
func TestClassifySaysLshdbOnce(t *testing.T) {
	err := classify(fmt.Errorf("lshdb: backup to %s: %w", "bk", syscall.ENOSPC))
	if want := "lshdb: disk full: backup to bk: no space left on device"; err.Error() != want || !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("classify = %q (ErrDiskFull %v, ENOSPC %v), want %q matching both", err, errors.Is(err, ErrDiskFull), errors.Is(err, syscall.ENOSPC), want)
	}
	err = classify(fmt.Errorf("lshdb: creating %s: %w", "idx", syscall.ENOSPC))
	if want := "lshdb: disk full: creating idx: no space left on device"; err.Error() != want {
		t.Fatalf("classify = %q, want %q", err, want)
	}
}

// Ensure that a new index refuses a stop word that could never match a
// word (one holding white space, or empty), naming it and making nothing,
// and that an index whose manifest has such words (made before they were
// checked) still opens and shingles as it did: its stored texts give back
// their records' sets (Check), and the words that match still drop.
func TestStopWordsThatCannotMatch(t *testing.T) {
	fs := vfs.NewMem()
	for _, bad := range []string{"of the", ""} {
		d, err := Open("new", &Options{fs: fs, Shingle: minhash.ShingleWord, StopWords: []string{"the", bad}})
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, minhash.ErrInvalidOptions) || !strings.Contains(err.Error(), strconv.Quote(bad)) ||
			strings.Count(err.Error(), "invalid options") != 1 {
			t.Errorf("creating with stop word %q: %v, want ErrInvalidOptions naming it, saying invalid options once", bad, err)
		}
	}
	if d, err := Open("new", &Options{fs: fs, Shingle: minhash.ShingleWord, StopWords: []string{"the"}}); err != nil || !d.Created() {
		t.Fatalf("creating with good stop words after the refusals: %v", err)
	} else {
		d.Close()
	}

	d := mustOpen(t, "old", &Options{fs: fs, Shingle: minhash.ShingleWord, ShingleSize: 2, StopWords: []string{"the"}})
	docs := []Doc{{ID: "a", Text: "The cat sat on the mat"}, {ID: "b", Text: "a cat sat on a mat, of the house"}}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	editManifest(t, fs, "old", func(m *codec.Manifest) { m.StopWords = append(m.StopWords, "of the", "") })

	// Its parameters as Params reports them open it (they were refused as
	// differing from the stored list: a maintainer review's K5); a word
	// that cannot match is refused, as at creation.
	d = mustOpen(t, "old", &Options{fs: fs})
	if got := d.Params().StopWords; !slices.Equal(got, []string{"the"}) {
		t.Errorf("Params().StopWords = %q, want the words that match, [the]", got)
	}
	d.Close()
	d = mustOpen(t, "old", &Options{fs: fs, StopWords: []string{"the"}})
	d.Close()
	// The same word spelled otherwise, the same once normalized (fold):
	// the same stop word (EMB-8: refused).
	d = mustOpen(t, "old", &Options{fs: fs, StopWords: []string{"THE", "The"}})
	d.Close()
	if _, err := Open("old", &Options{fs: fs, StopWords: []string{"the", "of the"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("reopening with a stop word that cannot match: %v, want ErrInvalidOptions", err)
	}
	if _, err := Open("old", &Options{fs: fs, StopWords: []string{"a"}}); !errors.Is(err, ErrParamsMismatch) {
		t.Errorf("reopening with other stop words: %v, want ErrParamsMismatch", err)
	}
	d = mustOpen(t, "old", &Options{fs: fs})
	defer d.Close()
	rep, err := d.Check(context.Background())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("Check: %v %q", err, rep.Problems)
	}
	if err := d.Put(Doc{ID: "c", Text: "cat sat on mat"}, nil); err != nil {
		t.Fatal(err)
	}
	// "the" still drops: a's words are c's ("cat sat on mat"), Jaccard 1.
	res, err := d.QueryID(context.Background(), "c", &QueryOptions{Threshold: 0.9})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "a" || res.Matches[0].Jaccard != 1 {
		t.Fatalf("query c: %+v, %v, want a at Jaccard 1", res, err)
	}
}

// TestHelperTryOpen is not a test: TestRefusedOpenKeepsTheLock runs the
// test binary again with LSHDB_TRY_OPEN set, to open an index from another
// process; it prints "locked" when refused with ErrLocked, "opened" when
// it opened it.
func TestHelperTryOpen(t *testing.T) {
	dir := os.Getenv("LSHDB_TRY_OPEN")
	if dir == "" {
		t.Skip("helper process only")
	}
	d, err := Open(dir, nil)
	switch {
	case errors.Is(err, ErrLocked):
		os.Stdout.WriteString("locked\n")
	case err == nil:
		d.Close()
		os.Stdout.WriteString("opened\n")
	default:
		t.Fatal(err)
	}
}

// Ensure that a refused Open, read-only Open or Drop of an index that this
// process has open leaves it locked against other processes. Asking who
// held the lock opened the lock file and closed it, and closing any
// descriptor of a file releases the process's POSIX locks on it: another
// process then opened the index and wrote beside this one, and the synced
// writes of one were lost on reopen (an embedder's review). The oracle:
// another process's Open, refused with ErrLocked after each.
func TestRefusedOpenKeepsTheLock(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document held open by this process"}, nil); err != nil {
		t.Fatal(err)
	}
	other := func(after string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTryOpen$")
		cmd.Env = append(os.Environ(), "LSHDB_TRY_OPEN="+dir)
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "locked\n") {
			t.Fatalf("another process's Open after %s: %q (%v), want it refused with ErrLocked", after, out, err)
		}
	}
	other("this process's Open")
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second Open in this process: %v", err)
	}
	other("a second Open in this process")
	if _, err := Open(dir+"/.", &Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a read-only Open in this process under another name: %v", err)
	}
	other("a read-only Open in this process")
	if err := Drop(context.Background(), dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Drop of an index this process has open: %v", err)
	}
	other("a Drop in this process")
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("the index after: %d documents (%v), want 1", n, err)
	}
}

// Ensure that pairs spilling in the system's temporary directory (an
// index it cannot write) takes a new directory of its own there: one made
// first under the predictable name (lshdb-pairs-PID-N.tmp, another
// user's in a shared /tmp) took the spilled ids and sets (a security
// review); and that the sweep makes nothing through a symbolic link of a
// dead run's name. The oracle: the planted directories, still empty, the
// linked directory untouched, and the pairs.
func TestPairsTempDirIsItsOwn(t *testing.T) {
	tmp, dir := pairOfTwoInTmp(t)
	var planted []string
	for n := pairsRuns.Load() + 1; n <= pairsRuns.Load()+3; n++ {
		p := filepath.Join(tmp, fmt.Sprintf("%s%d-%d%s", pairsTmpPrefix, os.Getpid(), n, pairsTmpSuffix))
		if err := os.Mkdir(p, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o777) // NB: as another user's, which this one may write
		planted = append(planted, p)
	}
	victim := t.TempDir()
	link := filepath.Join(tmp, pairsTmpPrefix+"4242-1"+pairsTmpSuffix)
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleRunAge)
	os.Chtimes(victim, old, old)
	d, err := Open(dir, &Options{fs: readOnlyFS{vfs.Default, dir}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := collectPairs(t, d, nil); len(got) != 1 {
		t.Fatalf("pairs = %v, want (a, b)", got)
	}
	for _, p := range planted {
		if names, err := os.ReadDir(p); err != nil || len(names) != 0 {
			t.Errorf("a directory planted under the run's name %s holds %v (%v), want nothing", p, names, err)
		}
	}
	if names, err := os.ReadDir(victim); err != nil || len(names) != 0 {
		t.Errorf("the directory a dead run's name links to holds %v (%v), want nothing", names, err)
	}
}

// unwritableDirFS is lockDeniedFS whose directory dir says it is writable
// by no one (chmod a-w), as root's tests cannot make one that refuses
// them.
type unwritableDirFS struct {
	lockDeniedFS
	dir string
}

type modeInfo struct {
	vfs.FileInfo
	mode os.FileMode
}

func (m modeInfo) Mode() os.FileMode { return m.mode }

func (f unwritableDirFS) Stat(name string) (vfs.FileInfo, error) {
	fi, err := f.lockDeniedFS.Stat(name)
	if err == nil && name == f.dir {
		return modeInfo{fi, os.ModeDir | 0o555}, nil
	}
	return fi, err
}

// Ensure that an index in a directory writable by no one (chmod -R a-w,
// an archive) opens read-only without its lock file, which cannot be
// made there: no read command could open it, its owner's included (an
// operator's review). A writable open is refused as before. The oracle:
// the documents read back.
func TestReadOnlyOpenOfAnUnwritableDirectory(t *testing.T) {
	mem := vfs.NewMem()
	d := mustOpen(t, "idx", &Options{fs: mem})
	if err := d.Put(Doc{ID: "a", Text: "a document kept in an archive no one writes"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	ro, err := Open("idx", &Options{fs: unwritableDirFS{lockDeniedFS{mem}, "idx"}, ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only open of an index writable by no one: %v", err)
	}
	defer ro.Close()
	if doc, err := ro.Get("a"); err != nil || doc.Text != "a document kept in an archive no one writes" {
		t.Fatalf("Get: %+v %v", doc, err)
	}
	if _, err := Open("idx", &Options{fs: unwritableDirFS{lockDeniedFS{mem}, "idx"}}); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("a writable open of it: %v, want a permission error", err)
	}
}

// Ensure that Open's refusal of a URL that is no index does not show its
// password: a TLS Redis URL (rediss://, which managed services give out),
// one with a slash missing, and a server's address (a fuzz campaign's F2).
func TestOpenRefusalHidesThePassword(t *testing.T) {
	for _, u := range []string{"rediss://default:sekret@cache.example.com:6379/idx", "redis:/default:sekret@cache.example.com:6379/idx", "http://admin:sekret@localhost:8080"} {
		_, err := Open(u, nil)
		if !errors.Is(err, ErrInvalidOptions) || strings.Contains(err.Error(), "sekret") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("Open(%s): %v, want ErrInvalidOptions without the password", u, err)
		}
	}
}
