package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
)

// Ensure that a write command that created its index and then fails,
// having written nothing itself, removes what it made only when nothing
// else used it (an operator's review: it removed the index with the
// documents commands attached to it had stored, and the new parent
// directory with a sibling index another command had built there):
//   - documents written through it by an attached insert keep the index,
//     with a note, and a sibling index under the same new directory stays;
//   - with no other writer, the index and the directories it made go;
//   - an empty directory given as --db is emptied, not removed.
//
// The oracle: the documents each command was told were stored, counted
// in the indexes that remain.
func TestFailedCreatorRemovesOnlyItsOwn(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix sockets")
	}
	dir := shortDir(t)
	three := filepath.Join(dir, "three.jsonl")
	var lines []string
	for i := range 3 {
		lines = append(lines, docLine(fmt.Sprintf("other-%d", i), docText(i)))
	}
	os.WriteFile(three, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	idx := filepath.Join(dir, "night", "day1", "a")
	creator := startPiped(t, "insert", "--db", idx, "--progress", "none", "-")
	waitCount(t, httpapi.SocketPath(idx), creator, func(n uint64) bool { return n == 0 })
	if out, _ := mustRun(t, "insert", "--db", idx, three); !strings.HasPrefix(out, "inserted 3 documents") {
		t.Fatalf("the attached insert: %q", out)
	}
	sibling := filepath.Join(dir, "night", "day1", "b")
	mustRun(t, "insert", "--db", sibling, three)
	// The creator's own input is bad from its first record: it writes
	// nothing and fails.
	fmt.Fprintln(creator.stdin, `{"id": broken`)
	creator.stdin.Close()
	if err := <-creator.done; err == nil {
		t.Fatalf("the creator with a bad record succeeded: %s", creator.out)
	}
	if !strings.Contains(creator.out.String(), "was kept: other commands wrote 3 documents to it meanwhile") {
		t.Errorf("the creator's output lacks the note: %s", creator.out)
	}
	for _, x := range []string{idx, sibling} {
		if n, err := countOf(x); err != nil || n != 3 {
			t.Errorf("%s: %d documents, %v; want the 3 written to it", x, n, err)
		}
	}

	// Alone, a failed creator leaves nothing it made.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": broken`+"\n"), 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "new", "x", "y"), bad}, ""); code == 0 {
		t.Fatalf("an insert of a bad record succeeded: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a failed creator left the directory it made: %v", err)
	}
	// An empty directory given is emptied again, not removed.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, errOut, code := runLine([]string{"build", "--db", empty, "--threshold", "0.6", bad}, ""); code == 0 {
		t.Fatalf("a build of a bad record succeeded: %s", errOut)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("the empty directory given holds %d entries after a failed build (%v): an empty index was left", len(ents), err)
	}
	// A file another process put in the index's directory meanwhile is
	// not the index's: it stays (and the index with it, said).
	shared := filepath.Join(dir, "shared")
	creator = startPiped(t, "insert", "--db", shared, "--progress", "none", "-")
	waitCount(t, httpapi.SocketPath(shared), creator, func(n uint64) bool { return n == 0 })
	notes := filepath.Join(shared, "notes.txt")
	os.WriteFile(notes, []byte("mine\n"), 0o644)
	fmt.Fprintln(creator.stdin, `{"id": broken`)
	creator.stdin.Close()
	<-creator.done
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine\n" {
		t.Errorf("a failed creator removed a file another process put beside its index: %v", err)
	}
	if !strings.Contains(creator.out.String(), "was kept") {
		t.Errorf("the creator's output lacks the note: %s", creator.out)
	}
}

// failingWrite is an index whose n-th PutPrepared fails without writing.
type failingWrite struct {
	*db.DB
	n, calls int
}

var errInjected = errors.New("injected write failure")

func (f *failingWrite) PutPrepared(ctx context.Context, pb *db.PreparedBatch) (db.BatchResult, error) {
	if f.calls++; f.calls == f.n {
		return db.BatchResult{}, errInjected
	}
	return f.DB.PutPrepared(ctx, pb)
}

// Ensure that insert, writing each batch while the next is prepared,
// stops at the first batch that fails: the batches before it stored and
// counted, "committed through" at the last of them, none after it
// written (the oracle: the documents stored, counted in the reopened
// index, and the input's positions).
func TestInsertWriteAheadStopsAtFailure(t *testing.T) {
	dir := t.TempDir()
	d, err := db.Open(dir, &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &failingWrite{DB: d, n: 2}
	w := &inserter{d: f, commitCtx: commitCtx{context.Background()}, ids: map[string]uint8{}, batch: make([]db.Doc, 0, 1000), add: func(int) {}}
	var putErr error
	for i := range 3500 {
		if putErr = w.put(posDoc{db.Doc{ID: fmt.Sprint(i), Text: docText(i)}, fmt.Sprintf("f:%d", i+1)}); putErr != nil {
			break
		}
	}
	if putErr == nil {
		putErr = w.flush()
	}
	if !errors.Is(putErr, errInjected) {
		t.Fatalf("the insert ended with %v, want the second batch's failure", putErr)
	}
	if w.sum.Inserted != 1000 || w.through != "f:1000" || w.inflight != nil {
		t.Fatalf("after the failure: %d inserted, through %q, in flight %v; want 1000 through f:1000, none", w.sum.Inserted, w.through, w.inflight)
	}
	if n, err := d.Count(); err != nil || n != 1000 {
		t.Fatalf("%d documents stored (%v); want the first batch's 1000, none after the failed one", n, err)
	}
	if _, err := d.Get("999"); err != nil {
		t.Fatalf("the first batch's last document: %v", err)
	}
	if _, err := d.Get("2000"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a document after the failed batch: %v, want ErrNotFound", err)
	}
	d.Close()
}

// Ensure that a command whose index met damage in the background fails
// (exit 1, the damage named), though its own work succeeded: insert
// printed "inserted" and exited 0 beside a logged checksum error. The
// damage: bytes overwritten in the middle of the index's largest table,
// which a compaction started by the command's writes reads.
func TestCommandFailsOnDamageSeen(t *testing.T) {
	idx, _ := compactedIndex(t)
	damageLargestTable(t, idx)
	// The command's writes (small memtables: flushes fill level 0), and
	// the compactions they start in the background read the damaged
	// table; the writes themselves succeed.
	var errOut bytes.Buffer
	out := &outWriter{w: io.Discard}
	a := &app{ctx: context.Background(), root: context.Background(), stdin: strings.NewReader(""), stdout: out, out: out, stderr: &errWriter{w: &errOut}, dbDir: idx}
	d, closeDB, err := a.openFresh(&db.Options{MustExist: true, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; a.opened[0].Corruption() == nil && b < 2000; b++ {
		batch := make([]db.Doc, 100)
		for i := range batch {
			batch[i] = db.Doc{ID: fmt.Sprintf("new-%d-%d", b, i), Text: fmt.Sprintf("document %d: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i+b), 40))}
		}
		d.PutBatch(batch, &db.WriteOptions{NoSync: true})
	}
	closeDB()
	// The command returned nil: its exit status is the damage's.
	if code := a.finish(nil); code != exitDamaged || !strings.Contains(errOut.String(), "lshdb check") || !strings.Contains(errOut.String(), "corrupt") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// compactedIndex builds and compacts an index of 3,000 documents (d0 …
// d2999, about 300 bytes each) in a temporary directory, and returns it
// and its input (JSON Lines).
func compactedIndex(t *testing.T) (idx, input string) {
	t.Helper()
	idx = filepath.Join(t.TempDir(), "idx")
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "{\"id\":\"d%d\",\"text\":%q}\n", i, fmt.Sprintf("document %d: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), 40)))
	}
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, in.String()); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"compact", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	return idx, in.String()
}

// damageLargestTable overwrites 32 bytes in the middle of the largest
// table of the index in dir, where a compaction will read them.
func damageLargestTable(t *testing.T, dir string) {
	t.Helper()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var biggest string
	var size int64
	for _, p := range tables {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			biggest, size = p, fi.Size()
		}
	}
	f, err := os.OpenFile(biggest, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xde, 0xad}, 16), size/3); err != nil {
		t.Fatal(err)
	}
}
