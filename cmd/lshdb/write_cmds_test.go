package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/db"
	"github.com/parquet-go/parquet-go"
)

// runCtx runs one command line in-process with ctx.
func runCtx(ctx context.Context, args []string, stdin io.Reader) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(ctx, args, stdin, &out, &errb)
	return out.String(), errb.String(), code
}

// storedTexts reopens the index and returns its id → text (stored text
// when the index keeps it, else "").
func storedTexts(t *testing.T, dir string) map[string]string {
	t.Helper()
	d, err := db.Open(dir, &db.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := map[string]string{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		got[doc.ID] = doc.Text
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", rep, err)
	}
	return got
}

func docLine(id, text string) string { return fmt.Sprintf(`{"id":%q,"text":%q}`, id, text) }

func docText(i int) string {
	return fmt.Sprintf("document %d: some words of its own, %d and %d", i, i*7, i*13)
}

// Ensure that a bad record costs no good one: without --skip-bad, insert
// commits every document before it and names it by file and line; with
// --skip-bad every bad record is named on stderr and kept in --rejects,
// and the reopened index holds exactly the good ones.
func TestInsertBadRecords(t *testing.T) {
	dir := t.TempDir()
	longID := strings.Repeat("x", 5000)
	bad := map[int]string{ // line → raw record
		1201: docLine(longID, "an id over 4096 bytes"),
		1300: `{"id":"broken","text":`,
		1400: "{\"id\":\"u\xff1\",\"text\":\"invalid UTF-8 in the id\"}",
		1450: docLine("", "an empty id"),
	}
	var lines []string
	want := map[string]string{}
	for i := 1; i <= 1500; i++ {
		if raw, ok := bad[i]; ok {
			lines = append(lines, raw)
			continue
		}
		id := fmt.Sprintf("doc%d", i)
		lines = append(lines, docLine(id, docText(i)))
		want[id] = docText(i)
	}
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	idx := filepath.Join(dir, "stop")
	out, errOut, code := runLine([]string{"insert", "--db", idx, "--store-text", in}, "")
	wantErr := fmt.Sprintf("lshdb: committed 1200 documents through %[1]s:1200; stopped at %[1]s:1201 (id %q… (5000 bytes)): invalid document id: 5000 bytes (at most 4096) (--skip-bad skips malformed records, --rejects FILE keeps them)\n", in, longID[:64])
	if code != 1 || out != "" || errOut != wantErr {
		t.Fatalf("without --skip-bad: exit %d, stdout %q, stderr\n%q\nwant\n%q", code, out, errOut, wantErr)
	}
	got := storedTexts(t, idx)
	for i := 1; i <= 1200; i++ {
		id := fmt.Sprintf("doc%d", i)
		if got[id] != want[id] {
			t.Fatalf("%s: stored %q, want %q", id, got[id], want[id])
		}
	}
	if len(got) != 1200 {
		t.Fatalf("%d documents stored, want the 1200 before line 1201", len(got))
	}

	idx = filepath.Join(dir, "skip")
	rejects := filepath.Join(dir, "rejects.jsonl")
	out, errOut, code = runLine([]string{"insert", "--db", idx, "--store-text", "--skip-bad", "--rejects", rejects, in}, "")
	if code != 0 || out != "inserted 1496 documents (0 replaced stored ones); 0 repeated ids in the input (last one wins), 0 empty texts skipped, 4 bad records skipped\n" {
		t.Fatalf("--skip-bad: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	wantStderr := fmt.Sprintf(`lshdb: skipped %[1]s:1201 (id %[2]q… (5000 bytes)): invalid document id: 5000 bytes (at most 4096)
lshdb: skipped %[1]s:1300: not a JSON object: unexpected end of JSON input
lshdb: skipped %[1]s:1400: field "id" is not valid UTF-8: "\"u\xff1\""
lshdb: skipped %[1]s:1450: invalid document id: empty
`, in, longID[:64])
	if errOut != wantStderr {
		t.Fatalf("--skip-bad stderr\n%s\nwant\n%s", errOut, wantStderr)
	}
	rej, err := os.ReadFile(rejects)
	if err != nil {
		t.Fatal(err)
	}
	if wantRej := bad[1201] + "\n" + bad[1300] + "\n" + bad[1400] + "\n" + bad[1450] + "\n"; string(rej) != wantRej {
		t.Fatalf("rejects file\n%q\nwant\n%q", rej, wantRej)
	}
	if got := storedTexts(t, idx); !maps.Equal(got, want) {
		t.Fatalf("--skip-bad stored %d documents, want %d", len(got), len(want))
	}
}

// Ensure that insert and build report the same counts for the same input
// (ids repeated across insert's batches counted once) and store the same
// documents: each id's last text, counted by hand from the input.
func TestInsertBuildSameCounts(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	last := map[string]string{}
	for i := range 2500 {
		id := fmt.Sprintf("id%d", i%1200) // 1,200 distinct ids, 1,300 repeats, across 1,000-line batches
		text := docText(i)
		lines = append(lines, docLine(id, text))
		last[id] = text
	}
	in := filepath.Join(dir, "dups.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	const want = "inserted 1200 documents (0 replaced stored ones); 1300 repeated ids in the input (last one wins), 0 empty texts skipped, 0 bad records skipped\n"
	for _, cmd := range []string{"insert", "build"} {
		idx := filepath.Join(dir, cmd)
		out, errOut, code := runLine([]string{cmd, "--db", idx, "--store-text", in}, "")
		if code != 0 || out != want {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want %q", cmd, code, out, errOut, want)
		}
		if got := storedTexts(t, idx); !maps.Equal(got, last) {
			t.Fatalf("%s stored %d documents, not each id's last text", cmd, len(got))
		}
		// A second run replaces every stored id once (insert: each batch
		// written while the next is prepared, in order: the last text of
		// an id in two batches wins).
		out, _, _ = runLine([]string{cmd, "--db", idx, in}, "")
		if again := "inserted 1200 documents (1200 replaced stored ones); 1300 repeated ids in the input (last one wins), 0 empty texts skipped, 0 bad records skipped\n"; out != again {
			t.Fatalf("%s again: %q, want %q", cmd, out, again)
		}
		if got := storedTexts(t, idx); !maps.Equal(got, last) {
			t.Fatalf("%s again stored %d documents, not each id's last text", cmd, len(got))
		}
	}
}

// Ensure that insert and build count an id stored by a batch that also
// holds an empty copy of it, before or after the stored one, and count
// the empty copy as no repeat: insert left the id out of its count
// ("inserted 1 document" where it stored 2, and build said 2: a nightly
// review's NQ-1), and counted a repeat where build did not. The oracle is
// the texts stored: each id's last copy that is not empty.
func TestInsertCountsAnIDWithAnEmptyCopy(t *testing.T) {
	dir := t.TempDir()
	for i, lines := range [][]string{
		{docLine("p", "hello world this is a text"), docLine("q", "hello world this is a text!"), docLine("p", "")},
		{docLine("p", ""), docLine("p", "hello world this is a text"), docLine("q", "hello world this is a text!")},
	} {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", i))
		os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		for _, cmd := range []string{"insert", "build"} {
			idx := filepath.Join(dir, fmt.Sprint(cmd, i))
			out, errOut, code := runLine([]string{cmd, "--db", idx, "--store-text", in}, "")
			// NB: the empty copy is no repeat (insert counted it one).
			if want := "inserted 2 documents (0 replaced stored ones); 0 repeated ids in the input (last one wins), 1 empty text skipped, 0 bad records skipped\n"; code != 0 || out != want {
				t.Fatalf("%s of %q: exit %d, stdout %q, stderr %q; want %q", cmd, lines, code, out, errOut, want)
			}
			want := map[string]string{"p": "hello world this is a text", "q": "hello world this is a text!"}
			if got := storedTexts(t, idx); !maps.Equal(got, want) {
				t.Fatalf("%s of %q stored %v, want %v", cmd, lines, got, want)
			}
		}
	}
}

// cancelAfter is a reader that cancels a context once n bytes have been
// read through it (an operator's Ctrl-C in the middle of the input).
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
	once   sync.Once
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:min(len(p), 4096)])
	c.n -= n
	if c.n <= 0 {
		c.once.Do(c.cancel)
	}
	return n, err
}

// Ensure that an interrupted insert commits exactly the documents through
// the line it names (the reopened index holds lines 1..L and nothing
// else) and exits 130, and that an interrupted build loads nothing and
// leaves no new index behind.
func TestInterrupted(t *testing.T) {
	var buf bytes.Buffer
	// NB: 3 MB, cancelled after 2.25 MB: past what the reader reads ahead
	// (up to 6 chunks of 256 KiB on 2 cores), so that some documents are
	// usually committed; none is a valid outcome too.
	for i := 1; i <= 40000; i++ {
		fmt.Fprintln(&buf, docLine(fmt.Sprint(i), docText(i)))
	}
	input := buf.Bytes()
	for _, cmd := range []string{"insert", "build"} {
		idx := filepath.Join(t.TempDir(), "index")
		ctx, cancel := context.WithCancel(context.Background())
		stdin := &cancelAfter{r: bytes.NewReader(input), n: len(input) * 3 / 4, cancel: cancel}
		out, errOut, code := runCtx(ctx, []string{cmd, "--db", idx, "-"}, stdin)
		cancel()
		if code != 130 || out != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
		if cmd == "build" {
			if errOut != "lshdb: interrupted: nothing loaded (a build is atomic); re-run it\n" {
				t.Fatalf("build: %q", errOut)
			}
			if _, err := os.Stat(idx); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("an interrupted build left %s: %v", idx, err)
			}
			continue
		}
		var n, through int
		if errOut != "lshdb: interrupted: committed 0 documents; re-run it\n" {
			if _, err := fmt.Sscanf(errOut, "lshdb: interrupted: committed %d documents through stdin:%d; re-run with the records after it\n", &n, &through); err != nil {
				t.Fatalf("insert: %q: %v", errOut, err)
			}
		}
		got := slices.Sorted(maps.Keys(storedTexts(t, idx)))
		var want []string
		for i := 1; i <= through; i++ {
			want = append(want, fmt.Sprint(i))
		}
		slices.Sort(want)
		if n != through || !slices.Equal(got, want) || n == 40000 {
			t.Fatalf("insert says %d documents through line %d, the index holds %d", n, through, len(got))
		}
	}
}

// Ensure that an insert attached to an owner (lshdb serve) and
// interrupted says what it committed through the owner, exactly, as one
// that opens the index itself does (TestInterrupted): the documents it
// names are stored, and no other.
func TestInterruptedAttached(t *testing.T) {
	var buf bytes.Buffer
	for i := 1; i <= 40000; i++ {
		fmt.Fprintln(&buf, docLine(fmt.Sprint(i), docText(i)))
	}
	input := buf.Bytes()
	idx := filepath.Join(shortDir(t), "index")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	_, _, _, stop := startServe(t, "--db", idx)
	ctx, cancel := context.WithCancel(context.Background())
	stdin := &cancelAfter{r: bytes.NewReader(input), n: len(input) * 3 / 4, cancel: cancel}
	out, errOut, code := runCtx(ctx, []string{"insert", "--db", idx, "-"}, stdin)
	cancel()
	if code != 130 || out != "" {
		t.Fatalf("attached insert: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// NB: a batch under way that is not answered within the grace after
	// the interrupt (a slow machine, the race detector) is cut, and the
	// message says it may have been written: either is then right.
	var n, through, perhaps int
	if errOut != "lshdb: interrupted: committed 0 documents; re-run it\n" {
		if _, err := fmt.Sscanf(errOut, "lshdb: interrupted: committed %d documents through stdin:%d; re-run with the records after it\n", &n, &through); err != nil {
			if _, err := fmt.Sscanf(errOut, "lshdb: interrupted: committed %d documents through stdin:%d, and perhaps the next batch, through stdin:%d ", &n, &through, &perhaps); err != nil {
				t.Fatalf("attached insert: %q: %v", errOut, err)
			}
		}
	}
	if stop() != 0 {
		t.Fatal("the owner did not stop cleanly")
	}
	got := slices.Sorted(maps.Keys(storedTexts(t, idx)))
	upTo := func(k int) []string {
		var want []string
		for i := 1; i <= k; i++ {
			want = append(want, fmt.Sprint(i))
		}
		slices.Sort(want)
		return want
	}
	if n != through || !slices.Equal(got, upTo(through)) && (perhaps == 0 || !slices.Equal(got, upTo(perhaps))) || n == 40000 {
		t.Fatalf("attached insert says %d documents through line %d (perhaps %d), the index holds %d", n, through, perhaps, len(got))
	}
}

// Ensure that a failed create, insert or build on a new path leaves no
// directory behind (nor the parents it made), while a failure on an
// existing index keeps it and its documents.
func TestFailedWriteLeavesNoIndex(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.bin")
	os.WriteFile(garbage, []byte("\x00\x01\x02 not JSON\n"), 0o644)
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(docLine("a", docText(1))+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"create", "--threshold", "0.01"}, 2},
		{[]string{"insert", garbage}, 1},
		{[]string{"build", garbage}, 1},
		{[]string{"insert", "--format", "xml", good}, 2},
		{[]string{"build", filepath.Join(dir, "missing.jsonl")}, 1},
	} {
		idx := filepath.Join(dir, "new", "nested", "index")
		_, errOut, code := runLine(append([]string{c.args[0], "--db", idx}, c.args[1:]...), "")
		if code != c.code {
			t.Fatalf("%v: exit %d (%s), want %d", c.args, code, errOut, c.code)
		}
		if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v left %s behind: %v", c.args, filepath.Join(dir, "new"), err)
		}
	}
	idx := filepath.Join(dir, "kept")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, good}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, cmd := range []string{"insert", "build"} {
		if _, _, code := runLine([]string{cmd, "--db", idx, garbage}, ""); code != 1 {
			t.Fatalf("%s of garbage: exit %d", cmd, code)
		}
		if got := storedTexts(t, idx); len(got) != 1 {
			t.Fatalf("after a failed %s the index holds %d documents, want 1", cmd, len(got))
		}
	}
}

// Ensure that --memory beyond half of the machine's memory is a usage
// error naming the value, not an out-of-memory crash.
func TestBuildMemoryCap(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "index")
	_, errOut, code := runLine([]string{"build", "--db", idx, "--memory", "1000000000", "-"}, "")
	if code != 2 || !strings.HasPrefix(errOut, "lshdb: --memory 1000000000 MiB is more than half of this machine's memory (at most ") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(idx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused build created %s", idx)
	}
}

// Ensure that delete is atomic across its ids, reads them from arguments,
// stdin (CRLF) and --from, and leaves exactly the expected ids in the
// reopened index.
func TestDeleteCommand(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	model := map[string]string{}
	for i := range 3000 {
		id := fmt.Sprintf("d%d", i)
		fmt.Fprintln(&buf, docLine(id, docText(i)))
		model[id] = ""
	}
	idx := filepath.Join(dir, "index")
	if _, errOut, code := runLine([]string{"build", "--db", idx, "-"}, buf.String()); code != 0 {
		t.Fatal(errOut)
	}
	// One missing id: nothing deleted.
	_, errOut, code := runLine([]string{"delete", "--db", idx, "d1", "d2", "nope"}, "")
	if code != exitNotFound || errOut != "lshdb: document not found: \"nope\" (nothing deleted: a delete is all or nothing; --ignore-missing passes over the ids not stored)\n" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	// From stdin with CRLF and a repeat, beside an argument.
	var ids strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&ids, "d%d\r\n", i)
		delete(model, fmt.Sprintf("d%d", i))
	}
	ids.WriteString("d0\r\n\r\n")
	delete(model, "d2999")
	out, errOut, code := runLine([]string{"delete", "--db", idx, "-", "d2999", "--output", "json"}, ids.String())
	if code != 0 || strings.Count(out, "\n") != 1001 || !strings.HasPrefix(out, "{\"deleted\":\"d0\"}\n{\"deleted\":\"d1\"}\n") {
		t.Fatalf("stdin: exit %d, %d lines, %q", code, strings.Count(out, "\n"), errOut)
	}
	// From a file, with ids already gone: --ignore-missing; a line of
	// white space alone is blank (an adversarial review's A6: it was the
	// id "  ", not stored, and failed a delete without --ignore-missing).
	from := filepath.Join(dir, "ids.txt")
	os.WriteFile(from, []byte("d5\n  \t\nd1000\n\nd1001\n"), 0o644)
	delete(model, "d1000")
	delete(model, "d1001")
	out, errOut, code = runLine([]string{"delete", "--db", idx, "--from", from, "--ignore-missing"}, "")
	if code != 0 || out != "deleted d1000\ndeleted d1001\n" || errOut != "lshdb: not found (ignored): \"d5\"\nlshdb: note: deleted 2 documents; 1 id not stored (ignored)\n" {
		t.Fatalf("--from: exit %d, %q, %q", code, out, errOut)
	}
	if got := storedTexts(t, idx); !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(model))) {
		t.Fatalf("the index holds %d ids, the model %d", len(got), len(model))
	}
	if _, _, code := runLine([]string{"delete", "--db", idx}, ""); code != 2 {
		t.Fatalf("delete without ids: exit %d", code)
	}
}

// Ensure that an invalid id costs only its own record in every format
// (reliability R7's cases: a CSV row with a non-UTF-8 id, a directory
// file whose name is not UTF-8): the error names the file and line, and
// --skip-bad stores every other record.
func TestInvalidIDsByFormat(t *testing.T) {
	dir := t.TempDir()
	var csvRows []string
	csvRows = append(csvRows, "id,text")
	for i := 1; i <= 10; i++ {
		id := fmt.Sprintf("row%d", i)
		if i == 5 {
			id = "bad\xff"
		}
		csvRows = append(csvRows, id+`,"`+docText(i)+`"`) // NB: the text holds a comma
	}
	csvPath := filepath.Join(dir, "rows.csv")
	os.WriteFile(csvPath, []byte(strings.Join(csvRows, "\r\n")+"\r\n"), 0o644)
	textDir := filepath.Join(dir, "texts")
	os.Mkdir(textDir, 0o755)
	for i, name := range []string{"a.txt", "b\xff.txt", "c.txt"} {
		if err := os.WriteFile(filepath.Join(textDir, name), []byte(docText(i)), 0o644); err != nil {
			t.Skipf("this file system refuses a non-UTF-8 name: %v", err)
		}
	}
	for _, c := range []struct {
		path, stopErr string
		stopped       int // documents committed before the bad one
		skipped       int // documents stored with --skip-bad
	}{
		{csvPath, fmt.Sprintf("lshdb: committed 4 documents through %[1]s:5; stopped at %[1]s:6 (id \"bad\\xff\"): invalid document id: \"bad\\xff\" is not valid UTF-8 (--skip-bad skips malformed records, --rejects FILE keeps them)\n", csvPath), 4, 9},
		{textDir, fmt.Sprintf("lshdb: committed 1 document through %[1]s/a.txt; stopped at %[1]s/b\\xff.txt (id \"b\\xff.txt\"): invalid document id: \"b\\xff.txt\" is not valid UTF-8 (--skip-bad skips malformed records, --rejects FILE keeps them)\n", textDir), 1, 2},
	} {
		idx := filepath.Join(t.TempDir(), "index")
		_, errOut, code := runLine([]string{"insert", "--db", idx, c.path}, "")
		if code != 1 || errOut != c.stopErr {
			t.Fatalf("%s: exit %d, stderr\n%q\nwant\n%q", c.path, code, errOut, c.stopErr)
		}
		if got := storedTexts(t, idx); len(got) != c.stopped {
			t.Fatalf("%s: %d stored, want %d", c.path, len(got), c.stopped)
		}
		_, errOut, code = runLine([]string{"insert", "--db", idx, "--skip-bad", c.path}, "")
		if code != 0 || !strings.HasPrefix(errOut, "lshdb: skipped ") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%s --skip-bad: exit %d, %q", c.path, code, errOut)
		}
		if got := storedTexts(t, idx); len(got) != c.skipped {
			t.Fatalf("%s --skip-bad: %d stored, want %d", c.path, len(got), c.skipped)
		}
	}
}

// failingWriter accepts limit bytes, then fails every write with err (as
// a pipe whose reader went away: write |1: broken pipe).
type failingWriter struct {
	limit  int
	err    error
	writes int // calls, the failing ones included
	buf    bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.buf.Len()+len(p) > w.limit {
		return 0, &fs.PathError{Op: "write", Path: "|1", Err: w.err}
	}
	return w.buf.Write(p)
}

// Ensure that a failed write of the output ends the command: a closed
// pipe (lshdb … | head) exits 1 with no message, after one failed write;
// a write command that stops early says first what it committed; the
// shell runs no statement after it; any other write error is reported.
func TestOutputClosed(t *testing.T) {
	tmp := t.TempDir()
	var docs strings.Builder
	for i := range 3000 {
		fmt.Fprintln(&docs, docLine(fmt.Sprintf("d%d", i), docText(i)))
	}
	runW := func(w *failingWriter, args []string, stdin string) (string, int) {
		var errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(stdin), w, &errb)
		return errb.String(), code
	}
	epipe := func(limit int) *failingWriter { return &failingWriter{limit: limit, err: syscall.EPIPE} }

	// dedup's table goes out every 1,000 rows, and from stdin after each
	// batch (dedupBatch documents, all stored and counted): the first
	// flush fails, and the documents after it are not even read.
	idx := filepath.Join(tmp, "dedup")
	w := epipe(0)
	errOut, code := runW(w, []string{"dedup", "--db", idx, "-"}, docs.String())
	n := dedupBatch
	if code != exitPipe || errOut != fmt.Sprintf("lshdb: stored %d documents through stdin:%d; stopped: write |1: broken pipe\n", n, n) || w.writes != 1 {
		t.Fatalf("dedup: exit %d, %d writes, %q", code, w.writes, errOut)
	}
	if got := storedTexts(t, idx); len(got) != n {
		t.Fatalf("dedup stored %d documents, want %d", len(got), n)
	}
	// From a file, the first flush is at the 1,000th row, in the batch
	// that holds it.
	file := filepath.Join(tmp, "docs.jsonl")
	if err := os.WriteFile(file, []byte(docs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	idx = filepath.Join(tmp, "dedup-file")
	w = epipe(0)
	errOut, code = runW(w, []string{"dedup", "--db", idx, file}, "")
	n = (1000 + dedupBatch - 1) / dedupBatch * dedupBatch
	if code != exitPipe || errOut != fmt.Sprintf("lshdb: stored %d documents through %s:%d; stopped: write |1: broken pipe\n", n, file, n) || w.writes != 1 {
		t.Fatalf("dedup of a file: exit %d, %d writes, %q", code, w.writes, errOut)
	}
	// The same with JSON lines: the first line fails, after the first
	// batch.
	idx = filepath.Join(tmp, "dedup-json")
	w = epipe(0)
	errOut, code = runW(w, []string{"dedup", "--db", idx, "--output", "json", "-"}, docs.String())
	if code != exitPipe || errOut != fmt.Sprintf("lshdb: stored %d documents through stdin:%d; stopped: write |1: broken pipe\n", dedupBatch, dedupBatch) || w.writes != 1 {
		t.Fatalf("dedup --output json: exit %d, %d writes, %q", code, w.writes, errOut)
	}
	// insert commits everything, then its summary fails: it says it on
	// stderr (O2-5: it was quiet, and a job could not tell it from an
	// insert stopped part way), whatever the output format.
	idx = filepath.Join(tmp, "insert")
	for _, output := range []string{"table", "json"} {
		w = epipe(0)
		errOut, code = runW(w, []string{"insert", "--db", idx, "--output", output, "-"}, docs.String())
		if code != exitPipe || !strings.HasPrefix(errOut, "lshdb: inserted 3000 documents (") || !strings.HasSuffix(errOut, " (said here: standard output did not take it: broken pipe)\n") || w.writes != 1 {
			t.Fatalf("insert --output %s: exit %d, %d writes, %q", output, code, w.writes, errOut)
		}
	}
	if got := storedTexts(t, idx); len(got) != 3000 {
		t.Fatalf("insert stored %d documents, want 3000", len(got))
	}
	// delete says how many it deleted, not the one listed before the
	// pipe closed.
	for _, args := range [][]string{
		{"delete", "--db", idx, "--output", "json", "d1", "d2", "d3"},
		{"delete", "--db", idx, "d4", "d5", "d6"},
	} {
		w = epipe(0)
		errOut, code = runW(w, args, "")
		if want := "lshdb: deleted 3 documents (said here: standard output did not take it: broken pipe)\n"; code != exitPipe || errOut != want || w.writes != 1 {
			t.Errorf("%s: exit %d, %d writes, %q; want %q", args, code, w.writes, errOut, want)
		}
	}
	if got := storedTexts(t, idx); len(got) != 3000-6 {
		t.Fatalf("after two deletes of 3: %d documents, want %d", len(got), 3000-6)
	}
	for _, args := range [][]string{
		{"create", "--db", filepath.Join(tmp, "created")},
		{"create", "--db", filepath.Join(tmp, "created-json"), "--output", "json"},
		{"pairs", "--db", idx, "--threshold", "0.1", "--sort=false"},
		{"stats", "--db", idx},
		{"get", "--db", idx, "d7"},
		{"filter", "--db", idx, file},
		{"export", "--db", idx, "--all"},
		{"gen", "--n", "3000", "--out", "-"},
	} {
		w = epipe(0)
		errOut, code = runW(w, args, "")
		if args[0] == "pairs" { // the note on the threshold comes first
			_, errOut, _ = strings.Cut(errOut, "more similar pairs are likelier)\n")
		}
		if args[0] == "gen" { // it names its originals first
			_, errOut, _ = strings.Cut(errOut, " texts)\n")
		}
		if code != exitPipe || errOut != "" || w.writes != 1 {
			t.Errorf("%s: exit %d, %d writes, %q", args, code, w.writes, errOut)
		}
	}
	// The shell stops at the first failed write: no later statement runs.
	idx = filepath.Join(tmp, "shell")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	w = epipe(0)
	errOut, code = runW(w, []string{"shell", "--db", idx}, "put a one two three\nput b four five six\nput c seven eight\n")
	if code != exitPipe || w.writes != 1 || errOut != "> put a one two three\n" {
		t.Fatalf("shell: exit %d, %d writes, %q", code, w.writes, errOut)
	}
	if got := storedTexts(t, idx); len(got) != 1 || got["a"] != "one two three" {
		t.Fatalf("the shell ran on after its output closed: %v", got)
	}
	// Another write error is reported.
	w = &failingWriter{err: syscall.ENOSPC}
	errOut, code = runW(w, []string{"version"}, "")
	if code != 1 || errOut != "lshdb: write |1: no space left on device\n" {
		t.Fatalf("version to a full disk: exit %d, %q", code, errOut)
	}
	// A write command whose summary a closed pipe does not take says it
	// on stderr (exit 141): the work is done (build, insert and delete
	// exited 141 with nothing said: an operator's review, O2-5). The
	// oracle: what the index holds after each.
	idx = filepath.Join(tmp, "piped")
	two := `{"id":"a","text":"one two three"}` + "\n" + `{"id":"b","text":"four five six"}` + "\n"
	for _, c := range []struct {
		args  []string
		stdin string
		said  string
		held  int
	}{
		{[]string{"build", "--db", idx, "-"}, two, "lshdb: inserted 2 documents (0 replaced stored ones); 0 repeated ids in the input (last one wins), 0 empty texts skipped, 0 bad records skipped (said here: standard output did not take it: broken pipe)\n", 2},
		{[]string{"insert", "--db", idx, "-"}, `{"id":"c","text":"seven eight nine"}` + "\n", "lshdb: inserted 1 document (0 replaced stored ones); 0 repeated ids in the input (last one wins), 0 empty texts skipped, 0 bad records skipped (said here: standard output did not take it: broken pipe)\n", 3},
		{[]string{"delete", "--db", idx, "a"}, "", "lshdb: deleted 1 document (said here: standard output did not take it: broken pipe)\n", 2},
	} {
		w = epipe(0)
		errOut, code = runW(w, c.args, c.stdin)
		if code != exitPipe || errOut != c.said {
			t.Errorf("%s to a closed pipe: exit %d, %q; want %d, %q", c.args[0], code, errOut, exitPipe, c.said)
		}
		if got := storedTexts(t, idx); len(got) != c.held {
			t.Errorf("after %s: %d documents stored, want %d", c.args[0], len(got), c.held)
		}
	}
	// A build whose summary cannot be written says that it is in (it
	// said only the write's error, and a job retried a build that was
	// in: a nightly operator's review, N2); the index holds it.
	idx = filepath.Join(tmp, "built")
	w = &failingWriter{err: syscall.ENOSPC}
	errOut, code = runW(w, []string{"build", "--db", idx, "-"}, `{"id":"a","text":"one two three"}`+"\n"+`{"id":"b","text":"four five six"}`+"\n")
	if code != 1 || !strings.Contains(errOut, "lshdb: the build is in (2 documents stored), but its summary could not be written: write |1: no space left on device") {
		t.Fatalf("build to a full disk: exit %d, %q", code, errOut)
	}
	if got := storedTexts(t, idx); len(got) != 2 || got["b"] != "four five six" {
		t.Fatalf("the build said to be in holds %v", got)
	}
}

// Ensure that build and insert read a Parquet file (the way Hugging Face
// datasets ship) into the same index as the JSON Lines of the same rows:
// the documents read back equal.
func TestInsertParquet(t *testing.T) {
	type row struct {
		ID    string `parquet:"id"`
		Text  string `parquet:"text"`
		Extra int64  `parquet:"extra"`
	}
	tmp := t.TempDir()
	var rows []row
	var jsonl strings.Builder
	for i := range 300 {
		r := row{ID: fmt.Sprintf("r%03d", i), Text: fmt.Sprintf("row %d of a parquet file, words %d and %d", i, i%13, i%29), Extra: int64(i)}
		rows = append(rows, r)
		fmt.Fprintf(&jsonl, "{\"id\":%q,\"text\":%q}\n", r.ID, r.Text)
	}
	pq := filepath.Join(tmp, "train-00000-of-00001.parquet")
	writeParquet(t, pq, rows, parquet.Compression(&parquet.Snappy))
	for _, cmd := range []string{"build", "insert"} {
		fromPQ, fromJSON := filepath.Join(tmp, cmd+"-pq"), filepath.Join(tmp, cmd+"-json")
		if _, errOut, code := runLine([]string{cmd, "--db", fromPQ, pq}, ""); code != 0 {
			t.Fatalf("%s of a Parquet file: exit %d %s", cmd, code, errOut)
		}
		if _, errOut, code := runLine([]string{cmd, "--db", fromJSON, "-"}, jsonl.String()); code != 0 {
			t.Fatalf("%s of JSON Lines: exit %d %s", cmd, code, errOut)
		}
		a, ra := docsOf(t, fromPQ)
		b, rb := docsOf(t, fromJSON)
		if len(a) != len(rows) || !reflect.DeepEqual(a, b) || !ra.OK() || !rb.OK() {
			t.Errorf("%s: %d documents from Parquet, %d from JSON Lines, equal %v", cmd, len(a), len(b), reflect.DeepEqual(a, b))
		}
	}
}

// Ensure that `upgrade` takes a format 3 text index (the golden one) to
// format 5, says so, prints the same pairs and scores after as before,
// checks clean, and has nothing to do a second time.
func TestUpgradeToFormat5(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if err := os.CopyFS(dir, os.DirFS("../../testdata/golden/format3/text")); err != nil {
		t.Fatal(err)
	}
	pairs := func() string {
		out, errOut, code := runLine([]string{"pairs", "--db", dir}, "")
		if code != 0 {
			t.Fatalf("pairs: exit %d, %s", code, errOut)
		}
		return out
	}
	before := pairs()
	if strings.Count(before, "\n") < 2 {
		t.Fatalf("pairs before the upgrade: %q", before)
	}
	hint := "index format: 3 (lshdb upgrade takes it to 5, whose stored sketches make pairs about twice as fast)\n"
	if out, errOut, code := runLine([]string{"info", "--db", dir}, ""); code != 0 || !strings.Contains(out, hint) {
		t.Fatalf("info before the upgrade: exit %d, %q, %q", code, out, errOut)
	}
	out, errOut, code := runLine([]string{"upgrade", "--db", dir}, "")
	if code != 0 || out != "upgraded index format 3 to 5: 40 documents, storage text\n" {
		t.Fatalf("upgrade: exit %d, %q, %q", code, out, errOut)
	}
	if after := pairs(); after != before {
		t.Fatalf("pairs after the upgrade:\n%s\nbefore:\n%s", after, before)
	}
	if out, errOut, code := runLine([]string{"check", "--db", dir}, ""); code != 0 {
		t.Fatalf("check: exit %d, %q, %q", code, out, errOut)
	}
	if out, errOut, code := runLine([]string{"info", "--db", dir}, ""); code != 0 || !strings.Contains(out, "index format: 5\n") {
		t.Fatalf("info after the upgrade: exit %d, %q, %q", code, out, errOut)
	}
	out, errOut, code = runLine([]string{"upgrade", "--db", dir}, "")
	if code != 0 || out != "index format 5 needs no upgrade: nothing to do\n" {
		t.Fatalf("a second upgrade: exit %d, %q, %q", code, out, errOut)
	}
}

// Ensure that a command on an index of a format this build does not open
// exits with the status of its own (5), saying how to upgrade it, and
// changes nothing: a rollout script told it from any other error only by
// parsing stderr (a compatibility review). The oracle: the golden format
// 1 index, which upgrade then opens.
func TestFormatRefusalExitStatus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	if err := os.CopyFS(dir, os.DirFS("../../testdata/golden/format1/text")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"info"}, {"pairs"}, {"insert", "-"}} {
		_, errOut, code := runLine(append(append([]string{}, cmd...), "--db", dir), `{"id":"n","text":"a new document"}`)
		if code != exitFormat || !strings.Contains(errOut, "lshdb upgrade --db "+dir) {
			t.Fatalf("%s on a format 1 index: exit %d, %q; want %d, naming lshdb upgrade", cmd[0], code, errOut, exitFormat)
		}
	}
	if out, errOut, code := runLine([]string{"upgrade", "--db", dir}, ""); code != 0 || !strings.HasPrefix(out, "upgraded index format 1 to ") {
		t.Fatalf("upgrade: exit %d, %q, %q", code, out, errOut)
	}
	if _, errOut, code := runLine([]string{"get", "--db", dir, "n"}, ""); code != exitNotFound {
		t.Fatalf("get of the refused insert's document: exit %d, %q; want it not stored", code, errOut)
	}
}

// startStdinInsert starts lshdb insert reading standard input into a new
// index, in another process (skipped with -short).
func startStdinInsert(t *testing.T) (idx string, ins *piped) {
	t.Helper()
	if testing.Short() {
		t.Skip("an insert in another process (-short)")
	}
	idx = filepath.Join(shortDir(t), "idx")
	mustRun(t, "create", "--db", idx)
	return idx, startPiped(t, "insert", "--db", idx, "-")
}

// openReadOnly opens idx read-only (no owner may hold it), closed when
// the test ends.
func openReadOnly(t *testing.T, idx string) *db.DB {
	t.Helper()
	d, err := db.Open(idx, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Ensure that insert reading standard input commits what it has read when
// the input pauses, without waiting for a batch of 1,000 or the end: the
// documents are visible (here to a client attached to the insert's
// socket) while the stream stays open, and the rest follows at its end.
func TestInsertStreamCommitsWhenInputPauses(t *testing.T) {
	idx, ins := startStdinInsert(t)
	write := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := fmt.Fprintf(ins.stdin, "{\"id\":\"s%d\",\"text\":\"streamed document number %d, sent while the input stays open\"}\n", i, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 10)
	sock := filepath.Join(idx, "lshdb.sock")
	waitServed(t, sock, ins.done)
	waitCount(t, sock, ins, func(n uint64) bool { return n == 10 })
	write(10, 15)
	ins.stdin.Close()
	if err := <-ins.done; err != nil {
		t.Fatalf("insert: %v %s", err, ins.out)
	}
	if !strings.Contains(ins.out.String(), "inserted 15 documents") {
		t.Errorf("insert said %q", ins.out)
	}
	d := openReadOnly(t, idx)
	if n, err := d.Count(); err != nil || n != 15 {
		t.Errorf("%d documents, %v; want 15", n, err)
	}
}

// Ensure that insert reading a stream that never pauses for long (a line
// every 50 ms) commits as it goes, within about stallFlushAfter of each
// batch's first document, not when 1,000 have come: the count served
// reaches 10 while the stream is still short of 100 lines.
func TestInsertStreamCommitsATrickle(t *testing.T) {
	idx, ins := startStdinInsert(t)
	var wrote atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; i < 200; i++ { // NB: 10 s at most, then a pause
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := fmt.Fprintf(ins.stdin, "{\"id\":\"t%d\",\"text\":\"trickled document number %d, one every 50 ms\"}\n", i, i); err != nil {
				return
			}
			wrote.Add(1)
		}
	}()
	sock := filepath.Join(idx, "lshdb.sock")
	waitServed(t, sock, ins.done)
	waitCount(t, sock, ins, func(n uint64) bool { return n >= 10 })
	if w := wrote.Load(); w >= 100 {
		t.Errorf("10 documents served only after %d lines were written: the trickle was held", w)
	}
	close(stop)
	<-stopped
	ins.stdin.Close()
	if err := <-ins.done; err != nil {
		t.Fatalf("insert: %v %s", err, ins.out)
	}
	d := openReadOnly(t, idx)
	if n, err := d.Count(); err != nil || n != uint64(wrote.Load()) {
		t.Errorf("%d documents, %v; want the %d written", n, err, wrote.Load())
	}
}

// Ensure that a build or insert of inputs that hold no record succeeds
// (a night with nothing new) but says so on stderr, where a job's mail
// shows it, and that one that inserts says nothing of the kind.
func TestInsertOfNothingSaysSo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	for _, cmd := range []string{"build", "insert"} {
		out, errOut, code := runLine([]string{cmd, "--db", filepath.Join(dir, cmd), empty}, "")
		if code != 0 || !strings.Contains(out, "inserted 0 documents") || !strings.Contains(errOut, "the inputs held no record") {
			t.Errorf("%s of an empty file: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
	_, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "insert"), "-"}, "{\"id\":\"a\",\"text\":\"some words to index\"}\n")
	if code != 0 || strings.Contains(errOut, "held no record") {
		t.Errorf("insert of a record: exit %d, stderr %q", code, errOut)
	}
}

// Ensure that a directory of record files given without --format (each
// file one text document, as the help says) is noted, and that --format
// reads their records (the operator's case: nightly JSON Lines files
// dropped into a folder became two huge documents, silently).
func TestRecordFilesInADirectory(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../testdata/cmd/inputs/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "night.jsonl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory of record files only is refused, before an index is
	// made: a build of dataset shards stored one document a shard and
	// exited 0 (an ML dataset user's ML3).
	for _, cmd := range []string{"insert", "build", "dedup"} {
		out, errOut, code := runLine([]string{cmd, "--db", filepath.Join(dir, "a"), in}, "")
		if code != 2 || out != "" || !strings.Contains(errOut, "holds record files only (night.jsonl)") || !strings.Contains(errOut, "--format jsonl") {
			t.Fatalf("%s of a directory of a JSON Lines file: exit %d\n%s%s", cmd, code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s refused made the index: %v", cmd, err)
		}
	}
	// NB: as the reader walks it: a subdirectory's and a link's record
	// files are counted too, a hidden one not (it said "night.jsonl and 1
	// more" of four: a nightly operator's review, N4).
	if err := os.MkdirAll(filepath.Join(in, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sub/c.jsonl", ".hidden.jsonl", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(in, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(in, "night.jsonl"), filepath.Join(in, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "c"), in}, "")
	if code != 0 || !strings.Contains(errOut, "holds record files (link.jsonl and 2 more)") {
		t.Fatalf("a directory of record files, a link and a subdirectory: exit %d\n%s", code, errOut)
	}
	// A link to the directory is walked as the directory (a maintainer
	// review's K2: no note).
	latest := filepath.Join(dir, "latest")
	if err := os.Symlink(in, latest); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runLine([]string{"insert", "--db", filepath.Join(dir, "d"), latest}, "")
	if code != 0 || !strings.Contains(errOut, latest+" holds record files (link.jsonl and 2 more)") {
		t.Fatalf("a link to the directory: exit %d\n%s", code, errOut)
	}
	if err := os.RemoveAll(filepath.Join(in, "sub")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".hidden.jsonl", "notes.txt", "link.jsonl"} {
		os.Remove(filepath.Join(in, name))
	}
	records := strings.Count(strings.TrimSpace(string(src)), "\n") + 1
	out, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "b"), "--format", "jsonl", in}, "")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("inserted %d documents", records)) || strings.Contains(errOut, "record files") {
		t.Fatalf("--format jsonl on the directory: exit %d\n%s%s", code, out, errOut)
	}
}

// Ensure that --seed makes a new index of that seed (the help of
// --scheme named a flag that did not exist), that another seed on an
// existing index is refused as a mismatch, and that seed 0 with the
// datasketch scheme (which db takes as its default, 1) is refused.
func TestSeedFlag(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "create", "--db", idx, "--seed", "5")
	d, err := db.Open(idx, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Params().Seed; got != 5 {
		t.Errorf("seed %d, want 5", got)
	}
	d.Close()
	for _, seed := range []string{"6", "0"} {
		_, errOut, code := runLine([]string{"insert", "--db", idx, "--seed", seed}, `{"id":"a","text":"some text"}`+"\n")
		if code == 0 || !strings.Contains(errOut, "--seed 5 (given: "+seed+")") {
			t.Errorf("insert --seed %s into an index of seed 5: exit %d: %s", seed, code, errOut)
		}
	}
	_, errOut, code := runLine([]string{"create", "--db", filepath.Join(t.TempDir(), "ds"), "--scheme", "datasketch", "--seed", "0"}, "")
	if code != 2 || !strings.Contains(errOut, "--seed 0") {
		t.Errorf("create --scheme datasketch --seed 0: exit %d: %s", code, errOut)
	}
}

// Ensure that an index given as an input is refused, whole: read as a
// folder of texts, its own files were stored as documents (its OPTIONS
// file among them) and the others counted as bad records.
func TestIndexAsInput(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if _, errOut, code := runLine([]string{"insert", "--db", src}, `{"id":"a","text":"some text"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	for _, cmd := range []string{"insert", "build"} {
		_, errOut, code := runLine([]string{cmd, "--db", dst, src}, "")
		if code == 0 || !strings.Contains(errOut, "an index (a Pebble store), not a folder of documents") {
			t.Errorf("%s from an index: exit %d: %s", cmd, code, errOut)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%s from an index left an index at %s", cmd, dst)
		}
	}
	// In a folder of texts, an index is skipped as a bad record.
	parent := filepath.Join(dir, "parent")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, filepath.Join(parent, "idx")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "a.txt"), []byte("a text beside an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runLine([]string{"insert", "--db", dst, parent}, "")
	if code != 0 || !strings.Contains(out, "inserted 1 document ") || !strings.Contains(errOut, "an index (a Pebble store)") {
		t.Errorf("insert from a folder holding an index: exit %d\n%s%s", code, out, errOut)
	}
}

// Ensure that an output path that is not a regular file is not replaced
// by one: a symbolic link is followed (its target gets the output, the
// link stays), and a device or FIFO is written in place (filter --out
// /dev/full replaced the device with a file, and exited 0). The oracle
// is the file system after the command, and the output read back.
func TestOutputsThatAreNotFiles(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","text":"the quick brown fox jumps over the lazy dog"}`+"\n"+`{"id":"b","text":"the quick brown fox jumps over the lazy dog!"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "insert", "--db", idx, in)
	// A symbolic link: its target gets the output.
	target, link := filepath.Join(dir, "target.jsonl"), filepath.Join(dir, "link.jsonl")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"filter", "--db", idx, "--out", link, in}, ""); code != 0 {
		t.Fatalf("filter --out a link: exit %d: %s", code, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), `"id":"a"`) || strings.Contains(string(b), `"id":"b"`) {
		t.Errorf("the link's target holds %q, want the kept document a", b)
	}
	// /dev/full: written in place, so the write fails, and says so.
	if _, err := os.Stat("/dev/full"); err == nil {
		_, errOut, code := runLine([]string{"export", "--db", idx, "--all", "--out", "/dev/full"}, "")
		if code == 0 || !strings.Contains(errOut, "no space left") {
			t.Errorf("export --out /dev/full: exit %d: %s", code, errOut)
		}
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeDevice == 0 {
			t.Fatalf("/dev/full is no longer a device: %v %v", fi.Mode(), err)
		}
	}
	// A FIFO: its reader gets the output.
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); errors.Is(err, errors.ErrUnsupported) {
		return // NB: no FIFOs here (Windows)
	} else if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	if _, errOut, code := runLine([]string{"filter", "--db", idx, "--out", fifo, in}, ""); code != 0 {
		t.Fatalf("filter --out a FIFO: exit %d: %s", code, errOut)
	}
	if b := <-got; !strings.Contains(string(b), `"id":"a"`) {
		t.Errorf("the FIFO's reader got %q", b)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}

// Ensure that a build replacing the index's documents compacts after it
// (--compact auto), freeing their old records' space, and that neither a
// build that replaced few nor --compact never does: the same documents
// loaded again take about what one load took, where without compacting
// they take more; every pair is still found.
func TestBuildCompactsAfterReplacing(t *testing.T) {
	dir := shortDir(t)
	idx, in, extra := filepath.Join(dir, "idx"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "extra.jsonl")
	for _, args := range [][]string{
		{"gen", "--n", "3000", "--seed", "3", "--out", in},
		{"gen", "--n", "100", "--seed", "4", "--id-prefix", "extra", "--out", extra},
	} {
		if _, errOut, code := runLine(args, ""); code != 0 {
			t.Fatal(errOut)
		}
	}
	disk := func() uint64 {
		t.Helper()
		out, errOut, code := runLine([]string{"info", "--db", idx, "--output", "json"}, "")
		var info struct {
			DiskBytes uint64 `json:"disk_bytes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
			t.Fatalf("info: exit %d: %s%s", code, out, errOut)
		}
		return info.DiskBytes
	}
	var lastErr string // the last build's stderr
	build := func(file string, extra ...string) insertSummary {
		t.Helper()
		out, errOut, code := runLine(append([]string{"build", "--db", idx, "--output", "json", file}, extra...), "")
		lastErr = errOut
		var sum insertSummary
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
			t.Fatalf("build: exit %d: %s%s", code, out, errOut)
		}
		return sum
	}
	pairs := func() string {
		t.Helper()
		out, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json"}, "")
		if code != 0 || out == "" {
			t.Fatalf("pairs: exit %d: %s%s", code, out, errOut)
		}
		return out
	}
	if sum := build(in); sum.Compacted != nil || sum.Replaced != 0 {
		t.Fatalf("a build into an empty index: %+v", sum)
	}
	// A few new documents replace nothing: no compaction.
	if sum := build(extra); sum.Compacted != nil {
		t.Fatalf("a build that replaced nothing compacted: %+v", sum)
	}
	one, want := disk(), pairs()
	// The same documents again, with --compact never: the old records stay.
	if sum := build(in, "--compact", "never"); sum.Replaced != 3000 || sum.Compacted != nil {
		t.Fatalf("--compact never: %+v", sum)
	}
	grown := disk()
	if grown < one*3/2 {
		t.Fatalf("a load replacing every document took %d bytes on disk, one load %d: the test cannot tell a compaction", grown, one)
	}
	// And again, by default: compacted.
	sum := build(in)
	if sum.Replaced != 3000 || sum.Compacted == nil {
		t.Fatalf("a build replacing every document did not compact: %+v", sum)
	}
	// The build is said to be in before the compaction starts: a job
	// killed during it showed no sign (an operator's review, O5).
	if note := "lshdb: note: the build is in (3000 documents stored); compacting after replacing 3000 documents"; !strings.HasPrefix(lastErr, note) {
		t.Errorf("the build's stderr: %q, want it to begin %q", lastErr, note)
	}
	// NB: the reported sizes are the moment's (Pebble removes the files
	// a compaction replaced in the background); info's comes later.
	if after := disk(); after > one*5/4 || sum.Compacted.DiskBytesAfter >= sum.Compacted.DiskBytesBefore {
		t.Fatalf("compacted: %+v, info says %d bytes; one load took %d, before compacting %d", sum.Compacted, after, one, grown)
	}
	if got := pairs(); got != want {
		t.Fatalf("the pairs after the compacted build differ from the first builds':\n%s\nwant\n%s", got, want)
	}
}

// Ensure that build --delete-missing leaves the index holding exactly the
// inputs' documents (the oracle: the ids and texts of the input file,
// read back from the index), with the deletions counted; that --max-delete
// refuses a build over it with exit 1 and the index unchanged, in
// process and through a server that owns the index (the load's
// parameters over the API); and that --max-delete alone is a usage error.
func TestBuildDeleteMissing(t *testing.T) {
	root := shortDir(t)
	idx := filepath.Join(root, "idx")
	sample := "../../testdata/corpora/debian-sample/docs.jsonl"
	mustRun(t, "build", "--db", idx, sample)
	raw, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	// Tonight: the first 1,000 documents, one of them with a new text.
	night := filepath.Join(root, "night.jsonl")
	var want []db.Doc
	var nightLines []string
	for i, l := range lines[:1000] {
		var d struct{ ID, Text string }
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		if i == 7 {
			d.Text += " A new sentence, added tonight."
			b, _ := json.Marshal(map[string]string{"id": d.ID, "text": d.Text})
			l = string(b) + "\n"
		}
		nightLines = append(nightLines, strings.TrimSuffix(l, "\n")+"\n")
		want = append(want, db.Doc{ID: d.ID, Text: d.Text})
	}
	if err := os.WriteFile(night, []byte(strings.Join(nightLines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	holds := func(what string, want []db.Doc) {
		t.Helper()
		got, rep := docsOf(t, idx)
		if len(got) != len(want) || !rep.OK() {
			t.Fatalf("%s: %d documents (want %d), check %+v", what, len(got), len(want), rep)
		}
		for _, d := range want {
			if g := got[d.ID]; g == nil || g.Text != d.Text {
				t.Fatalf("%s: %s is missing or has another text", what, d.ID)
			}
		}
	}
	out, _ := mustRun(t, "build", "--db", idx, "--delete-missing", "--output", "json", night)
	var sum insertSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Deleted == nil || *sum.Deleted != len(lines)-1000 || sum.Replaced != 1000 {
		t.Fatalf("summary %s (%v): want %d deleted, 1000 replaced", out, err, len(lines)-1000)
	}
	holds("after --delete-missing", want)

	// 400 of 1,000 to delete: over the default 50%? No; over 300, yes.
	small := filepath.Join(root, "small.jsonl")
	if err := os.WriteFile(small, []byte(strings.Join(nightLines[:600], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", "300", small}, "")
	if code != 1 || !strings.Contains(errOut, "400 stored documents") || !strings.Contains(errOut, "nothing loaded") {
		t.Fatalf("a build over --max-delete: exit %d %s", code, errOut)
	}
	holds("after a refused build", want)
	// An empty input: refused (the least limit is one document).
	empty := filepath.Join(root, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", "100%", empty}, ""); code != 1 || !strings.Contains(errOut, "held no document") {
		t.Fatalf("an empty input with --delete-missing: exit %d %s", code, errOut)
	}
	holds("after an empty input refused", want)
	// Records skipped as bad (review B2): one that names a stored id held
	// by no other record fails the build, loading nothing; one whose id
	// another record holds (before or after it), or that names no stored
	// document, does not.
	badText := func(id string) string { return fmt.Sprintf(`{"id":%q,"text":5}`+"\n", id) }
	damaged := filepath.Join(root, "damaged.jsonl")
	os.WriteFile(damaged, []byte(strings.Join(nightLines[:3], "")+badText(want[3].ID)+strings.Join(nightLines[4:], "")), 0o644)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--skip-bad", damaged}, ""); code != 1 || !strings.Contains(errOut, "nothing loaded") ||
		!strings.Contains(errOut, fmt.Sprintf("damaged.jsonl:4 (id %q)", want[3].ID)) || !strings.Contains(errOut, "1 stored id") {
		t.Fatalf("a skipped record naming a stored document: exit %d %s", code, errOut)
	}
	holds("after a build refused for a skipped record", want)
	// A line that is not JSON (cut short) names no id that can be read:
	// any stored document may be its (review N1).
	cut := filepath.Join(root, "cut.jsonl")
	os.WriteFile(cut, []byte(strings.Join(nightLines[:999], "")+strings.TrimSuffix(nightLines[999], "}\n")+"\n"), 0o644)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--skip-bad", cut}, ""); code != 1 || !strings.Contains(errOut, "nothing loaded") ||
		!strings.Contains(errOut, "1 record was skipped as bad before its id could be read ("+cut+":1000)") {
		t.Fatalf("a skipped line that is not JSON: exit %d %s", code, errOut)
	}
	holds("after a build refused for a line that is not JSON", want)
	repeated := filepath.Join(root, "repeated.jsonl")
	// NB: and an id no document can have (over MaxIDBytes): refused, and
	// nothing to look up (review M2).
	long := fmt.Sprintf(`{"id":%q,"text":"a text"}`+"\n", strings.Repeat("y", db.MaxIDBytes+1))
	os.WriteFile(repeated, []byte(badText(want[5].ID)+strings.Join(nightLines, "")+badText(want[6].ID)+badText("not-stored")+long), 0o644)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--skip-bad", repeated}, ""); code != 0 || strings.Count(errOut, "skipped") != 4 {
		t.Fatalf("skipped records whose ids other records hold: exit %d %s", code, errOut)
	}
	holds("after a build with skipped records held by others", want)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--max-delete", "10%", small}, ""); code != 2 || !strings.Contains(errOut, "--delete-missing") {
		t.Fatalf("--max-delete alone: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", "-3", small}, ""); code != 2 || !strings.Contains(errOut, "a count") {
		t.Fatalf("--max-delete -3: exit %d %s", code, errOut)
	}
	for _, zero := range []string{"0", "0%"} {
		if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", zero, small}, ""); code != 2 || !strings.Contains(errOut, "leave --delete-missing out") {
			t.Fatalf("--max-delete %s: exit %d %s", zero, code, errOut)
		}
	}
	// NB: refused before anything is reached: no server needed.
	if _, errOut, code := runLine([]string{"build", "--db", "redis://127.0.0.1:1/x", "--delete-missing", small}, ""); code != 2 || !strings.Contains(errOut, "not supported on Redis") || strings.Contains(errOut, "DeleteAbsent") {
		t.Fatalf("--delete-missing on Redis: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", "300", small}, ""); code != 1 || strings.Contains(errOut, "MaxDeleted") {
		t.Fatalf("the refusal names the library's option: exit %d %s", code, errOut)
	}

	// Served: the owner loads, with the same limit.
	_, _, log, stop := startServe(t, "--db", idx)
	_, errOut, code = runLine([]string{"build", "--db", idx, "--delete-missing", "--max-delete", "30%", small}, "")
	if code != 1 || !strings.Contains(errOut, "more than its limit of 300") {
		t.Fatalf("a served build over --max-delete 30%%: exit %d %s", code, errOut)
	}
	mustRun(t, "build", "--db", idx, "--delete-missing", small)
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	holds("after a served --delete-missing", want[:600])
}

// Ensure that delete --ignore-missing of many ids names at most
// maxMissingNamed of those not stored and counts them all in one note
// (a nightly list of gone ids, run twice, named thousands on stderr and
// counted none), and that a delete refused for one missing id says
// nothing was deleted and how to pass over it.
func TestDeleteManyMissing(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	ids := filepath.Join(t.TempDir(), "gone.ids")
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "gone-%d\n", i)
	}
	b.WriteString("fox1\n")
	if err := os.WriteFile(ids, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"delete", "--db", idx, "--from", ids}, "")
	if code != exitNotFound || !strings.Contains(errOut, "nothing deleted, and 29 more of the ids are not stored") || !strings.Contains(errOut, "--ignore-missing") {
		t.Fatalf("a delete of missing ids: exit %d %s", code, errOut)
	}
	if got, _ := docsOf(t, idx); got["fox1"] == nil {
		t.Fatal("a refused delete deleted fox1")
	}
	// --from - is stdin, as for the other flags that name a file to read
	// (it was opened as a file named "-"), and a file it cannot open is
	// named by its flag.
	if _, errOut, code := runLine([]string{"delete", "--db", idx, "--from", "-"}, b.String()); code != exitNotFound || !strings.Contains(errOut, "nothing deleted, and 29 more of the ids are not stored") {
		t.Fatalf("delete --from - of missing ids: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"delete", "--db", idx, "--from", "-", "-"}, b.String()); code != 2 || !strings.Contains(errOut, "reads stdin once") {
		t.Fatalf("delete --from - -: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"delete", "--db", idx, "--from", "nofile"}, ""); code != 1 || errOut != "lshdb: --from nofile: no such file or directory\n" {
		t.Fatalf("delete --from a missing file: exit %d %q", code, errOut)
	}
	if out, errOut, code := runLine([]string{"delete", "--db", idx, "--from", "-"}, "x\n"); code != 0 || out != "deleted x\n" {
		t.Fatalf("delete --from -: exit %d %q %q", code, out, errOut)
	}
	empty := filepath.Join(t.TempDir(), "empty.ids")
	os.WriteFile(empty, nil, 0o644)
	if out, errOut := mustRun(t, "delete", "--db", idx, "--from", empty); out != "" || errOut != "lshdb: note: no ids given: nothing deleted\n" {
		t.Fatalf("delete of an empty list: %q %q", out, errOut)
	}
	long := filepath.Join(t.TempDir(), "long.ids")
	os.WriteFile(long, []byte("fox1\n"+strings.Repeat("x", 70<<10)+"\n"), 0o644)
	if _, errOut, code := runLine([]string{"delete", "--db", idx, "--from", long}, ""); code == 0 || !strings.Contains(errOut, "long.ids:2: longer than an id may be") {
		t.Fatalf("delete --from a file with an over-long line: exit %d %q", code, errOut)
	}
	// A gzipped list is read as every input is (it was refused as an id
	// "\x1f\x8b…").
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(b.String()))
	zw.Close()
	ids = filepath.Join(t.TempDir(), "gone.ids.gz")
	if err := os.WriteFile(ids, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := mustRun(t, "delete", "--db", idx, "--from", ids, "--ignore-missing")
	if out != "deleted fox1\n" || strings.Count(errOut, "not found (ignored)") != maxMissingNamed ||
		!strings.Contains(errOut, "deleted 1 document; 30 ids not stored (ignored), the first 20 named above") {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
	if got, _ := docsOf(t, idx); got["fox1"] != nil {
		t.Fatal("fox1 is still stored")
	}
}

// Ensure that --disk-reserve reaches the library's DiskReserve for the
// writes of a command: a reserve larger than any disk refuses a build as a
// full disk, naming the flag (not the library's option) and storing
// nothing, where the default and -1 build; and that a bad value is a
// usage error.
func TestDiskReserveFlag(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	in := "../../testdata/cmd/inputs/docs.jsonl"
	mustRun(t, "build", "--db", idx, in)
	huge := fmt.Sprint(int64(1) << 40) // MiB: an exbibyte
	for _, args := range [][]string{{"build", "--db", idx, "--disk-reserve", huge, in}, {"insert", "--db", idx, "--disk-reserve", huge, in}} {
		_, errOut, code := runLine(args, "")
		if code != 1 || !strings.Contains(errOut, "disk full") || !strings.Contains(errOut, "--disk-reserve MiB changes it") || strings.Contains(errOut, "Options.") {
			t.Errorf("%s under a reserve larger than the disk: exit %d %s", args[0], code, errOut)
		}
	}
	// NB: a new index under it: no "open it read-only" (there is none).
	_, errOut, code := runLine([]string{"build", "--db", filepath.Join(dir, "new"), "--disk-reserve", huge, in}, "")
	if code != 1 || !strings.Contains(errOut, "disk full") || strings.Contains(errOut, "read-only") {
		t.Errorf("a new index under a reserve larger than the disk: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a refused build left a new index behind")
	}
	mustRun(t, "build", "--db", idx, "--disk-reserve", "-1", in)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--disk-reserve", "-2", in}, ""); code != 2 || !strings.Contains(errOut, "--disk-reserve -2") {
		t.Errorf("--disk-reserve -2: exit %d %s", code, errOut)
	}
	// NB: a reserve below the room of a flush is taken, and said to be
	// one: 2 MiB let an insert fill the disk (a crash-safety review).
	for _, c := range []struct {
		reserve string
		note    bool
	}{{"2", true}, {"23", true}, {"24", false}, {"0", false}, {"-1", true}} {
		_, errOut, code := runLine([]string{"info", "--db", idx, "--disk-reserve", c.reserve}, "")
		if note := strings.Contains(errOut, "is below the room a flush of the index's writes needs (about 24 MiB)") || strings.Contains(errOut, "--disk-reserve -1: no free-space check: a write may fill the disk"); code != 0 || note != c.note {
			t.Errorf("--disk-reserve %s: exit %d, %q; want a note: %v", c.reserve, code, errOut, c.note)
		}
	}
	// A read-only command's spill (pairs in --memory 1 of 3,000 generated
	// documents spills their texts) is under the flag's reserve too: it
	// was under the default whatever the flag said, while its error named
	// the flag.
	gen := filepath.Join(dir, "gen.jsonl")
	mustRun(t, "gen", "--n", "3000", "--copy-fraction", "0.9", "--out", gen)
	spilling := filepath.Join(dir, "spilling")
	mustRun(t, "build", "--db", spilling, gen)
	if _, errOut, code := runLine([]string{"pairs", "--db", spilling, "--memory", "1", "--output", "tsv", "--disk-reserve", huge}, ""); code != 1 || !strings.Contains(errOut, "disk full") || !strings.Contains(errOut, "--disk-reserve MiB changes it") {
		t.Errorf("pairs spilling under a reserve larger than the disk: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"pairs", "--db", spilling, "--memory", "1", "--output", "tsv", "--disk-reserve", "-1", "--stats"}, ""); code != 0 || !strings.Contains(errOut, "spilled to disk: true") {
		t.Errorf("pairs spilling with no reserve: exit %d %s", code, errOut)
	}
}

// Ensure that output files take the umask's permissions (077: 0600), and
// an existing file keeps its own: export, filter, report and pairs
// --clusters wrote 0644 whatever the umask and the file had been. And
// that pairs --clusters writes its file whole or not at all (beside it,
// then renamed): the file holds the end line.
func TestOutputFilesKeepTheUmask(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits but read-only on Windows")
	}
	saved := processUmask
	processUmask = 0o077
	defer func() { processUmask = saved }()
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	in := barDocs(t, dir, 300)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, in}, ""); code != 0 {
		t.Fatal(errOut)
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	outs := map[string][]string{
		"export.jsonl":  {"export", "--db", idx, "--out"},
		"kept.jsonl":    {"filter", "--db", idx, in, "--out"},
		"report.html":   {"report", "--db", idx, "--out"},
		"clusters.json": {"pairs", "--db", idx, "--output", "json", "--header", "--clusters"},
	}
	for name, args := range outs {
		p := filepath.Join(dir, name)
		for _, want := range []os.FileMode{0o600, 0o640} {
			if want == 0o640 {
				if err := os.Chmod(p, 0o640); err != nil {
					t.Fatal(err)
				}
			}
			if _, errOut, code := runLine(append(slices.Clone(args), p), ""); code != 0 {
				t.Fatalf("%s: %s", name, errOut)
			}
			if got := mode(p); got != want {
				t.Errorf("%s: mode %o, want %o", name, got, want)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "clusters.json"))
	if err != nil || !strings.Contains(string(b), `{"end"`) {
		t.Errorf("the clusters file: %v %q", err, b)
	}
}

// Ensure that create takes the parameters the library does and the
// command did not: --normalization, --stop-words (and a file of them),
// --bands and --rows; that info says them; and that the index shingles
// by them (explain's exact Jaccard against one computed by hand: with
// normalization none and the stop word "the", "The Cat sat" is {The, Cat,
// sat} and "the Cat sat" is {Cat, sat}: 2/3; with fold they are equal).
// A flag that differs from an existing index's is refused.
func TestCreateNormalizationStopWordsBanding(t *testing.T) {
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop.txt")
	if err := os.WriteFile(stop, []byte("# stop words\nthe\n\nof\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"a","text":"The Cat sat"}` + "\n" + `{"id":"b","text":"the Cat sat"}` + "\n"
	for _, c := range []struct {
		norm string
		want float64
	}{{"none", 2.0 / 3}, {"fold", 1}, {"nfkc", 1}} {
		idx := filepath.Join(dir, c.norm)
		if _, errOut, code := runLine([]string{"create", "--db", idx, "--normalization", c.norm, "--shingle", "word", "--shingle-size", "1",
			"--stop-words", "a", "--stop-words-file", stop, "--bands", "20", "--rows", "5", "--threshold", "0.6"}, ""); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, docs); code != 0 {
			t.Fatal(errOut)
		}
		info, _, _ := runLine([]string{"info", "--db", idx, "--output", "json"}, "")
		for _, want := range []string{`"normalization":"` + c.norm + `"`, `"stop_words":["a","the","of"]`, `"bands":20`, `"rows":5`} {
			if !strings.Contains(info, want) {
				t.Errorf("%s: info lacks %s: %s", c.norm, want, info)
			}
		}
		out, errOut, code := runLine([]string{"explain", "--db", idx, "a", "b", "--output", "json"}, "")
		var e struct{ Jaccard float64 }
		if err := json.Unmarshal([]byte(out), &e); err != nil || code != 0 || math.Abs(e.Jaccard-c.want) > 1e-9 {
			t.Errorf("%s: explain a b: %s %s, want Jaccard %v", c.norm, out, errOut, c.want)
		}
	}
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "none"), "--normalization", "fold", "-"}, docs); code == 0 || !strings.Contains(errOut, "--normalization none (given: fold)") {
		t.Errorf("insert --normalization fold into a none index: exit %d: %s", code, errOut)
	}
	// In capitals, as a create takes it (a read-through's R9).
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "nfkc"), "--normalization", "NFKC", "-"}, docs); code != 0 {
		t.Errorf("insert --normalization NFKC into an nfkc index: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"create", "--db", filepath.Join(dir, "bad"), "--bands", "20"}, ""); code != 2 || !strings.Contains(errOut, "--rows") {
		t.Errorf("--bands without --rows: exit %d: %s", code, errOut)
	}
	// NB: a file larger than any list (a corpus given by mistake, or
	// /dev/zero, which was read for ever: a bad-input review's B4) is
	// refused, and no index is made.
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("word\n"), maxStopWordsFile/5+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{big, "/dev/zero"} {
		idx := filepath.Join(dir, "big")
		if _, errOut, code := runLine([]string{"create", "--db", idx, "--shingle", "word", "--stop-words-file", f}, ""); code != 2 || !strings.Contains(errOut, "larger than 1048576 bytes") {
			t.Errorf("--stop-words-file %s: exit %d: %s", f, code, errOut)
		}
		if _, err := os.Stat(idx); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("--stop-words-file %s refused, and the index was made: %v", f, err)
		}
	}
}

// Ensure that pairs --clusters writes to a FIFO (the check before the run
// opened and closed it, ending its reader, and the run then waited for
// another for ever) and to /dev/stdout when that is a pipe (its link's
// target is no path); and that --clusters naming the file standard output
// is refused (renamed over it, it took the pairs' name).
func TestClustersToFIFOAndStdout(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/stdout")
	}
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, barDocs(t, dir, 300)}, ""); code != 0 {
		t.Fatal(errOut)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	done := make(chan int, 1)
	go func() {
		_, _, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--clusters", fifo}, "")
		done <- code
	}()
	select {
	case code := <-done:
		if b := <-got; code != 0 || !strings.Contains(string(b), `{"end"`) {
			t.Errorf("--clusters a FIFO: exit %d, the reader got %q", code, b)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("--clusters a FIFO: the run waits for ever")
	}
	c := lshdbProcess("pairs", "--db", idx, "--output", "json", "--header", "--clusters", "/dev/stdout")
	out, err := c.Output() // NB: a pipe
	if err != nil || strings.Count(string(out), `{"end"`) != 2 {
		t.Errorf("--clusters /dev/stdout to a pipe: %v: %s", err, out)
	}
	file := filepath.Join(dir, "out.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c = lshdbProcess("pairs", "--db", idx, "--output", "json", "--clusters", file)
	c.Stdout = f
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err == nil || !strings.Contains(stderr.String(), "standard output") {
		t.Errorf("--clusters naming standard output's file: %v: %s", err, stderr.String())
	}
}

// Ensure that purge says how many expired documents it swept: the sweep
// its handle starts at Open took them first, and purge said "swept 0
// expired documents" while the index lost them (a CLI review). Three of
// five documents expire; purge sweeps exactly those. NB: the two sweeps
// raced: the test failed 4 runs of 6 of the command before.
func TestPurgeCountsTheExpired(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	in := ""
	for i := range 3 {
		in += fmt.Sprintf("{\"id\":\"short%d\",\"text\":\"a document that lives for a second, number %d\"}\n", i, i)
	}
	// NB: the documents that expire are written last, by a command that
	// ends well before they expire: a command that ran at their expiry
	// (the other insert, slow on a loaded machine) swept them itself.
	var start time.Time
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"insert", "--db", dir, "-"}, "{\"id\":\"a\",\"text\":\"a document that stays\"}\n{\"id\":\"b\",\"text\":\"another that stays\"}\n"},
		{[]string{"insert", "--db", dir, "--ttl", "2s", "-"}, in},
	} {
		start = time.Now()
		if _, errOut, code := runLine(c.args, c.stdin); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
	if time.Since(start) > 1900*time.Millisecond {
		t.Skip("the insert took so long that its own handle may have swept what it wrote")
	}
	time.Sleep(time.Until(start.Add(2100 * time.Millisecond)))
	// check, which sweeps nothing, counts them (a data-safety review:
	// info counted them, and check said nothing of them).
	if out, errOut, code := runLine([]string{"check", "--db", dir}, ""); code != 0 || !strings.Contains(out, "3 documents past their expiry, not yet swept") {
		t.Fatalf("check: exit %d, %q %s", code, out, errOut)
	}
	out, errOut, code := runLine([]string{"purge", "--db", dir}, "")
	if code != 0 || !strings.HasPrefix(out, "swept 3 expired documents; ") {
		t.Fatalf("purge: exit %d, %q %s", code, out, errOut)
	}
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 2 {
		t.Errorf("after purge: %d documents, %v; want 2", n, err)
	}
}

// TestRejectsIsNotAnInput: --rejects naming an input (by name, by another
// name, or a file inside an input directory) is refused before anything
// is read or written. The file was created, so emptied, before it was
// read: the input was lost, nothing was inserted, and the command exited
// 0.
func TestRejectsIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	body := `{"id":"a","text":"the quick brown fox jumps over the lazy dog"}` + "\n" + `{"id":"b","text":"the quick brown fox jumps over the lazy cat"}` + "\n"
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "one.txt"), []byte("a text file, one document"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, filepath.Join(dir, "other-name.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ rejects, input string }{
		{in, in},
		{filepath.Join(dir, ".", "docs.jsonl"), in},
		{filepath.Join(dir, "other-name.jsonl"), in},
		{filepath.Join(sub, "rejects.jsonl"), sub},
	} {
		for _, cmd := range []string{"insert", "build", "dedup"} {
			idx := filepath.Join(dir, "idx-"+cmd)
			_, stderr, code := runLine([]string{cmd, "--db", idx, "--progress", "none", "--skip-bad", "--rejects", c.rejects, c.input}, "")
			if code != 2 || !strings.Contains(stderr, "--rejects") || !strings.Contains(stderr, "is the input") {
				t.Errorf("%s --rejects %s %s: exit %d, %q; want a usage error naming --rejects", cmd, c.rejects, c.input, code, stderr)
			}
			if after, _ := os.ReadFile(in); string(after) != body {
				t.Fatalf("%s --rejects %s %s: the input is now %q", cmd, c.rejects, c.input, after)
			}
			if _, err := os.Stat(idx); err == nil {
				t.Errorf("%s --rejects %s %s: left an index behind", cmd, c.rejects, c.input)
			}
			if _, err := os.Stat(filepath.Join(sub, "rejects.jsonl")); err == nil {
				t.Errorf("%s --rejects %s %s: made the rejects file", cmd, c.rejects, c.input)
			}
		}
	}
	// A rejects file elsewhere is fine.
	if _, stderr, code := runLine([]string{"insert", "--db", filepath.Join(dir, "idx"), "--progress", "none", "--skip-bad", "--rejects", filepath.Join(dir, "rejects.jsonl"), in}, ""); code != 0 {
		t.Errorf("insert --rejects elsewhere: exit %d, %s", code, stderr)
	}
}

// TestIDFromLineSameBaseName: --id-from line with two inputs of one base
// name is refused before anything is written: the second file's records
// took the first one's ids (docs.jsonl:1) and replaced them, counted as
// repeated ids.
func TestIDFromLineSameBaseName(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, d := range []string{"a", "b"} {
		p := filepath.Join(dir, d, "docs.jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"text":"the text of file `+d+`, one line"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	idx := filepath.Join(dir, "idx")
	_, stderr, code := runLine(append([]string{"insert", "--db", idx, "--progress", "none", "--id-from", "line"}, paths...), "")
	if code != 2 || !strings.Contains(stderr, "same base name") {
		t.Errorf("insert --id-from line a/docs.jsonl b/docs.jsonl: exit %d, %q; want a usage error", code, stderr)
	}
	if _, err := os.Stat(idx); err == nil {
		t.Error("the refused insert left an index")
	}
	// Directories read as JSON Lines: refused at the second file.
	_, stderr, code = runLine([]string{"insert", "--db", idx, "--progress", "none", "--id-from", "line", "--format", "jsonl", dir}, "")
	if code == 0 || !strings.Contains(stderr, "same base name") {
		t.Errorf("insert --id-from line --format jsonl DIR: exit %d, %q; want the same base name refused", code, stderr)
	}
}

// TestDashIsNoOutputFile: - names stdin or stdout everywhere in the
// command; as report's --out, tune's --plot and pairs' --clusters it made a
// file named "-". It is refused, before any index is opened.
func TestDashIsNoOutputFile(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	t.Chdir(dir)
	for _, args := range [][]string{
		{"report", "--db", idx, "--out", "-"},
		{"tune", "--threshold", "0.8", "--plot", "-"},
		{"pairs", "--db", idx, "--clusters", "-"},
	} {
		_, stderr, code := runLine(args, "")
		if code != 2 || !strings.Contains(stderr, " - : ") {
			t.Errorf("%q: exit %d, %q; want a usage error", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
			t.Fatalf("%q made a file named -", args)
		}
	}
	if _, err := os.Stat(idx); err == nil {
		t.Error("an index was made")
	}
}

// Ensure that a record file saved as UTF-16 (with its mark) is one bad
// record, and that build --delete-missing keeps the documents it holds:
// stopped without --skip-bad, refused by the guard with it (any stored
// document may be the file's). The oracle: the documents read back.
func TestUTF16RecordFileKeepsTheIndex(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	a := "{\"id\":\"a1\",\"text\":\"the first file's first document, about foxes\"}\n{\"id\":\"a2\",\"text\":\"the first file's second document, about owls\"}\n"
	b := "{\"id\":\"b1\",\"text\":\"the second file's document, about cats and their ways\"}\n"
	os.WriteFile(filepath.Join(src, "a.jsonl"), []byte(a), 0o644)
	os.WriteFile(filepath.Join(src, "b.jsonl"), []byte(b), 0o644)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--format", "jsonl", src}, ""); code != 0 {
		t.Fatalf("build: exit %d, %s", code, errOut)
	}
	u16 := []byte{0xff, 0xfe}
	for _, r := range a {
		u16 = append(u16, byte(r), 0)
	}
	os.WriteFile(filepath.Join(src, "a.jsonl"), u16, 0o644)
	_, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--format", "jsonl", "--delete-missing", src}, "")
	if code != 1 || !strings.Contains(errOut, "a.jsonl: the file is UTF-16") || strings.Count(errOut, "UTF-16 (it starts") != 1 {
		t.Errorf("build --delete-missing of a UTF-16 record file: exit %d, %s", code, errOut)
	}
	_, errOut, code = runLine([]string{"build", "--db", idx, "--progress", "none", "--format", "jsonl", "--delete-missing", "--skip-bad", src}, "")
	if code != 1 || !strings.Contains(errOut, "--delete-missing would delete") || strings.Count(errOut, "lshdb: skipped") != 1 {
		t.Errorf("build --delete-missing --skip-bad of a UTF-16 record file: exit %d, %s", code, errOut)
	}
	if got := storedTexts(t, idx); len(got) != 3 || got["a1"] == "" || got["a2"] == "" {
		t.Errorf("after the refused builds: %q", got)
	}
}

// Ensure that text files that do not read as UTF-8 text keep what the
// index holds (a review of the input readers): a file of a directory
// saved as UTF-16 since the last build does not have its stored document
// deleted by build --delete-missing without --skip-bad (it was, exit 0;
// I6); one given by name is an error without --skip-bad (it was passed
// over, exit 0; I8); and two text files given by name with one base name,
// their one id, are refused before anything is read (the second replaced
// the first; I2).
func TestTextFilesKeepTheIndex(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	write := func(name string, b []byte) {
		t.Helper()
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", []byte("the first text file of the directory"))
	write("b.txt", []byte("a second text file, with other words"))
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", src}, ""); code != 0 {
		t.Fatalf("build: exit %d, %s", code, errOut)
	}
	// a.txt as Notepad's "Unicode" saves it: UTF-16LE with its mark.
	u16 := []byte{0xff, 0xfe}
	for _, r := range "the first text file of the directory" {
		u16 = append(u16, byte(r), 0)
	}
	write("a.txt", u16)
	_, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--delete-missing", src}, "")
	if code != 1 || !strings.Contains(errOut, "UTF-16") || !strings.Contains(errOut, `a.txt (id "a.txt"); --delete-missing would delete its document`) {
		t.Errorf("build --delete-missing with a.txt now UTF-16: exit %d, %s", code, errOut)
	}
	if out, _, code := runLine([]string{"get", "--db", idx, "a.txt"}, ""); code != 0 || !strings.Contains(out, "the first text file") {
		t.Errorf("a.txt after the refused build: exit %d, %s", code, out)
	}
	_, errOut, code = runLine([]string{"insert", "--db", idx, "--progress", "none", filepath.Join(src, "a.txt")}, "")
	if code != 1 || !strings.Contains(errOut, "stopped at") || !strings.Contains(errOut, "UTF-16") {
		t.Errorf("insert of a UTF-16 file by name: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--progress", "none", "--skip-bad", filepath.Join(src, "a.txt")}, ""); code != 0 || !strings.Contains(errOut, "skipped") {
		t.Errorf("the same with --skip-bad: exit %d, %s", code, errOut)
	}
	// The same from stdin (it was passed over, exit 0).
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--progress", "none", "--format", "text", "-"}, string(u16)); code != 1 || !strings.Contains(errOut, "stopped at stdin") {
		t.Errorf("insert of a UTF-16 text from stdin: exit %d, %s", code, errOut)
	}
	// A directory's file with a stray Latin-1 byte is passed over with a
	// note, as a binary one (it stopped the build), and kept by
	// --delete-missing; a binary file whose name no id can be (not
	// UTF-8) is passed over too (it failed the build's guard).
	write("a.txt", []byte("the first text file of the directory"))
	write("c.txt", []byte(strings.Repeat("plain english text that is long enough ", 20)))
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", src}, ""); code != 0 {
		t.Fatalf("build: exit %d, %s", code, errOut)
	}
	write("c.txt", []byte(strings.Repeat("plain english text that is long enough ", 20)+"caf\xe9"))
	write("caf\xe9.png", []byte("\x89PNG\x00\x00\x01"))
	_, errOut, code = runLine([]string{"build", "--db", idx, "--progress", "none", src}, "")
	if code != 0 || !strings.Contains(errOut, "skipped "+filepath.Join(src, "c.txt")+` (id "c.txt"): not valid UTF-8 (byte 0xe9 at offset 783)`) {
		t.Errorf("build of a directory with a stray byte in c.txt: exit %d, %s", code, errOut)
	}
	_, errOut, code = runLine([]string{"build", "--db", idx, "--progress", "none", "--delete-missing", src}, "")
	if code != 1 || !strings.Contains(errOut, `c.txt (id "c.txt"); --delete-missing would delete its document`) || strings.Contains(errOut, "invalid document id") {
		t.Errorf("build --delete-missing with c.txt passed over: exit %d, %s", code, errOut)
	}
	if out, _, code := runLine([]string{"get", "--db", idx, "c.txt"}, ""); code != 0 || !strings.Contains(out, "plain english") {
		t.Errorf("c.txt after the refused build: exit %d, %s", code, out)
	}
	os.Remove(filepath.Join(src, "c.txt"))
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--delete-missing", "--max-delete", "all", src}, ""); code != 0 {
		t.Errorf("build --delete-missing beside a binary file of a name no id can be: exit %d, %s", code, errOut)
	}
	write("x/n.txt", []byte("one text"))
	write("y/n.txt", []byte("another text"))
	for _, args := range [][]string{{filepath.Join(src, "x/n.txt"), filepath.Join(src, "y/n.txt")}, {"--format", "text", filepath.Join(src, "x/n.txt"), filepath.Join(src, "y")}} {
		_, errOut, code = runLine(append([]string{"insert", "--db", idx, "--progress", "none"}, args...), "")
		if code != 2 || !strings.Contains(errOut, "the second would replace the first") {
			t.Errorf("%v: two text files of one id: exit %d, %s", args, code, errOut)
		}
	}
	if _, _, code := runLine([]string{"get", "--db", idx, "n.txt"}, ""); code == 0 {
		t.Error("the refused insert stored n.txt")
	}
	// One file by two names (a hard link) is a repeat, not a clash.
	if err := os.MkdirAll(filepath.Join(src, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(src, "x/n.txt"), filepath.Join(src, "w/n.txt")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--progress", "none", filepath.Join(src, "x/n.txt"), filepath.Join(src, "w/n.txt")}, ""); code != 0 {
		t.Errorf("one file by two names: exit %d, %s", code, errOut)
	}
}

// Ensure that build --min-docs N refuses inputs of fewer than N documents
// to store, loading nothing (exit 1; a new index is not left behind, an
// existing one keeps its documents), and takes N of them (a nightly job's
// review, B4: an empty input built an empty index with exit 0). Records
// whose texts are blank, and earlier copies of an id, do not count (a
// nightly operator's review, N1: a night of 1,000 blank texts passed
// --min-docs 10 and built an empty index). The oracle: the index's count
// before and after, and the input's records.
func TestBuildMinDocs(t *testing.T) {
	dir := t.TempDir()
	idx, in, small := filepath.Join(dir, "idx"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "small.jsonl")
	mustRun(t, "gen", "--n", "300", "--seed", "4", "--out", in)
	mustRun(t, "gen", "--n", "20", "--seed", "5", "--id-prefix", "s", "--out", small)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--min-docs", "1", "-"}, ""); code != 1 || !strings.Contains(errOut, "it would store 0 (of 0 read: 0 empty, 0 superseded by a later copy of their id), fewer than its minimum of 1 (--min-docs 1") {
		t.Fatalf("an empty input: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(idx); !os.IsNotExist(err) {
		t.Fatalf("an empty input refused left the index behind: %v", err)
	}
	mustRun(t, "build", "--db", idx, "--progress", "none", "--min-docs", "300", in)
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--min-docs", "21", small}, ""); code != 1 || !strings.Contains(errOut, "it would store 20 (of 20 read: 0 empty, 0 superseded by a later copy of their id), fewer than its minimum of 21") {
		t.Fatalf("20 records: exit %d %s", code, errOut)
	}
	// 33 records: 12 blank texts, 3 ids given twice (6 records), 15 others;
	// 18 to store.
	var recs strings.Builder
	for i := range 30 {
		switch {
		case i < 12:
			fmt.Fprintf(&recs, "{\"id\":\"b%d\",\"text\":\"  \\t \"}\n", i)
		case i < 15:
			fmt.Fprintf(&recs, "{\"id\":\"r%d\",\"text\":\"an earlier copy of a document number %d\"}\n", i, i)
			fmt.Fprintf(&recs, "{\"id\":\"r%d\",\"text\":\"the later copy of a document number %d\"}\n", i, i)
		default:
			fmt.Fprintf(&recs, "{\"id\":\"t%d\",\"text\":\"a document with a text of its own, number %d\"}\n", i, i)
		}
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "none", "--min-docs", "19", "-"}, recs.String()); code != 1 || !strings.Contains(errOut, "it would store 18 (of 33 read: 12 empty, 3 superseded by a later copy of their id), fewer than its minimum of 19") {
		t.Fatalf("18 documents to store among 33 records: exit %d %s", code, errOut)
	}
	d := openReadOnly(t, idx)
	if n, err := d.Count(); err != nil || n != 300 {
		t.Fatalf("after a refused build: %d documents, %v; want 300", n, err)
	}
	fresh := filepath.Join(dir, "fresh")
	if out, errOut, code := runLine([]string{"build", "--db", fresh, "--progress", "none", "--min-docs", "18", "-"}, recs.String()); code != 0 {
		t.Fatalf("18 documents to store, --min-docs 18: exit %d %s%s", code, out, errOut)
	}
	if n, err := openReadOnly(t, fresh).Count(); err != nil || n != 18 {
		t.Fatalf("the build of 18 documents to store holds %d (%v)", n, err)
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--min-docs", "-1", small}, ""); code != 2 || !strings.Contains(errOut, "--min-docs -1") {
		t.Fatalf("--min-docs -1: exit %d %s", code, errOut)
	}
}

// Ensure that dedup warns of the documents it skipped as near-duplicates
// of an id that a later record of the input stored again with another
// text (their texts were then in no document, without a word: a nightly
// output review's O2), counting them and naming one, and says nothing
// when the id repeated had no duplicates. Oracle: a query by the skipped
// text, which finds nothing in the index.
func TestDedupWarnsOfOrphans(t *testing.T) {
	dir := t.TempDir()
	a := "the quick brown fox jumps over the lazy dog again and again"
	recs := []string{
		fmt.Sprintf(`{"id":"A","text":%q}`, a),
		fmt.Sprintf(`{"id":"B","text":%q}`, a+"!"),
		fmt.Sprintf(`{"id":"C","text":%q}`, a+"?"),
		`{"id":"D","text":"a text that nothing else in this input is close to at all"}`,
		`{"id":"D","text":"another text that nothing is close to, stored again under D"}`,
		`{"id":"A","text":"completely different text about something else entirely here"}`,
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(recs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	_, errOut := mustRun(t, "dedup", "--db", idx, in)
	if !strings.Contains(errOut, `lshdb: warning: 2 documents skipped as near-duplicates ("B", of "A" and 1 more) of a document whose id a later record of the input stored again`) {
		t.Errorf("dedup's stderr:\n%s", errOut)
	}
	if out, _ := mustRun(t, "query", "--db", idx, "--text", a+"!", "--output", "json"); out != "" {
		t.Errorf("B's text is in the index after all: %s", out)
	}
	// D was stored again, but nothing had been skipped for it.
	in2 := filepath.Join(dir, "in2.jsonl")
	if err := os.WriteFile(in2, []byte(strings.Join(recs[3:5], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut := mustRun(t, "dedup", "--db", filepath.Join(dir, "idx2"), in2); strings.Contains(errOut, "warning") {
		t.Errorf("a repeated id without duplicates warned:\n%s", errOut)
	}
	// An id stored again with the same text (another record of it, or
	// the stored document's own) keeps its near-duplicates: no warning
	// (a docs review's D-2). Oracle: a query by the skipped text, which
	// finds the id.
	same := []string{recs[0], recs[1], fmt.Sprintf(`{"id":"A","text":%q,"meta":"edited"}`, a)}
	for _, c := range []struct{ name, stored, input string }{
		{"repeated in the input", "", strings.Join(same, "\n")},
		{"stored before the run", same[0], strings.Join(same[1:], "\n")},
	} {
		idx := filepath.Join(t.TempDir(), "idx")
		if c.stored != "" {
			if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, c.stored+"\n"); code != 0 {
				t.Fatalf("insert: exit %d: %s", code, errOut)
			}
		}
		in := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(in, []byte(c.input+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut := mustRun(t, "dedup", "--db", idx, in)
		if strings.Contains(errOut, "warning") || !strings.Contains(errOut, "1 duplicate of") {
			t.Errorf("%s: dedup's stderr:\n%s", c.name, errOut)
		}
		if out, _ := mustRun(t, "query", "--db", idx, "--text", a+"!", "--output", "json"); !strings.Contains(out, `"id":"A"`) {
			t.Errorf("%s: B's near-duplicate A is not in the index: %q", c.name, out)
		}
	}
}

// Ensure that insert and build name the ids of the empty texts they skip
// (the first ten, and how many more), on stderr and in their JSON, where
// "3 empty texts skipped" named none (a review of skewed corpora, K7). The
// oracle: the ids written with empty or blank texts.
func TestEmptyTextsNamed(t *testing.T) {
	var in strings.Builder
	var empty []string
	for i := range 40 {
		text := fmt.Sprintf("document %d with enough words to be stored", i)
		if i%3 == 1 {
			text = []string{"", "   ", "\n\t"}[i%3]
			empty = append(empty, fmt.Sprintf("e%02d", i))
			fmt.Fprintf(&in, "{\"id\":\"e%02d\",\"text\":%q}\n", i, text)
			continue
		}
		fmt.Fprintf(&in, "{\"id\":\"d%02d\",\"text\":%q}\n", i, text)
	}
	for _, cmd := range []string{"insert", "build"} {
		idx := filepath.Join(t.TempDir(), "idx")
		_, errOut, code := runLine([]string{cmd, "--db", idx, "--progress", "none", "-"}, in.String())
		want := fmt.Sprintf("skipped as empty (no shingles: no text, or white space or stop words alone): %s and %d more", strings.Join(empty[:10], ", "), len(empty)-10)
		if code != 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d %q, want %q", cmd, code, errOut, want)
		}
		idx = filepath.Join(t.TempDir(), "idx")
		out, _, code := runLine([]string{cmd, "--db", idx, "--progress", "none", "--output", "json", "-"}, in.String())
		var sum insertSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil || code != 0 || sum.Empty != len(empty) || !slices.Equal(sum.EmptyIDs, empty[:10]) {
			t.Errorf("%s --output json: exit %d %s (%v)", cmd, code, out, err)
		}
	}
}

// Ensure that an input flag given empty, and standard input named twice,
// are refused as usage errors before an index is made: each was taken
// silently, an empty --id-field as the default's (a bad-input review,
// B15). Oracle: exit 2 naming the flag, and no index directory.
func TestInputFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--id-field", ""}, "--id-field is empty"},
		{[]string{"--text-field", " "}, "--text-field is empty"},
		{[]string{"--id-col", ""}, "--id-col is empty"},
		{[]string{"--text-col", ""}, "--text-col is empty"},
		{[]string{"-", "-"}, "standard input (-) twice"},
	} {
		for _, cmd := range []string{"insert", "build"} {
			idx := filepath.Join(dir, "idx")
			args := append([]string{cmd, "--db", idx}, c.args...)
			if !slices.Contains(c.args, "-") {
				args = append(args, "../../testdata/cmd/inputs/docs.jsonl")
			}
			_, errOut, code := runLine(args, "")
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("lshdb %s: exit %d, want 2 with %q:\n%s", strings.Join(args, " "), code, c.want, errOut)
			}
			if _, err := os.Stat(idx); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("lshdb %s refused, and made an index: %v", strings.Join(args, " "), err)
			}
		}
	}
}

// Ensure that a write command whose --ttl passed before it ended says so
// (a bad-input review, B15: "inserted 6 documents" of --ttl 1ns, none of
// which could be read), and that one whose --ttl has not passed does not.
// The oracle: get of a document written, not found (expired) after the
// note, found without it.
func TestNoteOfATTLThatPassed(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/cmd/inputs/docs.jsonl"
	const note = "lshdb: note: --ttl 1ns is shorter than this command took"
	for _, c := range []struct {
		cmd     []string
		expired bool
	}{
		{[]string{"insert", "--ttl", "1ns"}, true},
		{[]string{"build", "--ttl", "1ns"}, true},
		{[]string{"dedup", "--ttl", "1ns"}, true},
		{[]string{"insert", "--ttl", "1h"}, false},
		{[]string{"build"}, false},
	} {
		idx := filepath.Join(dir, fmt.Sprint(len(c.cmd), c.cmd[0], c.expired))
		_, errOut, code := runLine(append(c.cmd, "--db", idx, in), "")
		if code != 0 {
			t.Fatalf("%q: exit %d %s", c.cmd, code, errOut)
		}
		if got := strings.Contains(errOut, note); got != c.expired {
			t.Errorf("%q: note given %v, want %v: %s", c.cmd, got, c.expired, errOut)
		}
		_, getErr, code := runLine([]string{"get", "--db", idx, "fox1"}, "")
		if want := map[bool]int{true: exitNotFound, false: 0}[c.expired]; code != want {
			t.Errorf("%q: get fox1 exit %d, want %d: %s", c.cmd, code, want, getErr)
		}
		// NB: get says "(expired)" of each, as query and explain do (an
		// upgrade review's UPG-3: it said "document not found" alone).
		if c.expired && !strings.Contains(getErr, `document not found: "fox1" (expired)`) {
			t.Errorf("%q: get fox1: %q, want it said expired", c.cmd, getErr)
		}
		if _, getErr, _ := runLine([]string{"get", "--db", idx, "fox1", "nosuch", "fox2"}, ""); c.expired && !strings.Contains(getErr, `"fox1" (expired), "nosuch", "fox2" (expired)`) {
			t.Errorf("%q: get of three: %q, want the two expired said so", c.cmd, getErr)
		}
	}
}

// Ensure that the shell's put notes a --ttl that passed before it
// returned, and a text that opens a quote it does not close (stored as
// typed, as the help says: B15), and that a quoted text has no note. The
// oracle: get's answers.
func TestShellPutNotes(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	out, errOut, _ := runLine([]string{"shell", "--db", idx}, "put --ttl 1ns a hello there world\nput b \"unterminated text here\nput c \"quoted text\"\nput d it's fine\nget --output json b\nget --output json c\n")
	for _, want := range []string{
		"> put --ttl 1ns a hello there world\nlshdb: note: --ttl 1ns is shorter than this command took",
		"> put b \"unterminated text here\nlshdb: note: the text begins with \" and has no closing one: it was stored as typed, with its \"",
		"> put c \"quoted text\"\n> put d it's fine\n> get",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, `"text":"\"unterminated text here"`) || !strings.Contains(out, `"text":"quoted text"`) {
		t.Errorf("get: %s", out)
	}
	if _, _, code := runLine([]string{"get", "--db", idx, "a"}, ""); code != exitNotFound {
		t.Errorf("get a (--ttl 1ns): exit %d", code)
	}
	// help with words past its one, and shell typed in the shell.
	_, errOut, code := runLine([]string{"shell", "--db", idx}, "help put extra\nshell\n")
	if want := "> help put extra\nlshdb: help takes one command at most: put extra\n> shell\nlshdb: this is the shell already"; !strings.HasPrefix(errOut, want) || code != 1 {
		t.Errorf("exit %d, stderr %q, want it to start %q", code, errOut, want)
	}
}

// Ensure that a --meta-field that no document read has is noted (B15: a
// misspelt one stored no metadata and said nothing), and that one some
// documents have is not. The oracle: get's metadata of a document.
func TestNoteOfAMetaFieldNoneHas(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","text":"the quick brown fox","m":{"src":"x"}}`+"\n"+`{"id":"b","text":"jumps over the lazy dog"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = `lshdb: note: no document read has the field "m.nosuch" (--meta-field)`
	for _, c := range []struct {
		field    string
		noted    bool
		wantMeta string // get a's metadata, as JSON
	}{
		{"m.nosuch", true, ""},
		{"m", false, `{"src":"x"}`},
		{"m.src", false, `"x"`},
	} {
		idx := filepath.Join(dir, c.field)
		_, errOut, code := runLine([]string{"insert", "--db", idx, "--meta-field", c.field, in}, "")
		if code != 0 {
			t.Fatalf("%s: exit %d %s", c.field, code, errOut)
		}
		if got := strings.Contains(errOut, note); got != c.noted {
			t.Errorf("--meta-field %s: noted %v, want %v: %s", c.field, got, c.noted, errOut)
		}
		out, _ := mustRun(t, "get", "--db", idx, "--output", "json", "a")
		var got struct {
			Meta json.RawMessage `json:"meta"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || string(got.Meta) != c.wantMeta {
			t.Errorf("--meta-field %s: get a: meta %s (%v), want %q: %s", c.field, got.Meta, err, c.wantMeta, out)
		}
	}
}

// Ensure that a text of stop words alone, which has no shingles, is
// named in the note of empty texts as such (an analyst's review of the
// shell, SH8: the note said "no text, or white space alone").
func TestStopWordsAloneNoted(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	in := `{"id":"e1","text":"the a the"}` + "\n" + `{"id":"s1","text":"the quick brown fox jumps over the lazy dog"}` + "\n"
	_, errOut, code := runLine([]string{"build", "--db", idx, "--shingle", "word", "--stop-words", "a,the", "-"}, in)
	if code != 0 || !strings.Contains(errOut, "skipped as empty (no shingles: no text, or white space or stop words alone): e1") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// Ensure that compact and purge leave the index with its live
// write-ahead log alone: the purge of emptied posting lists before a
// compaction writes through the logs, and Pebble kept up to four of
// about 9 MiB for reuse until the next open, so compact said "50.8 MiB
// on disk (35.2 MiB of it write-ahead logs)" of 15 MiB of tables (an
// operator's lifecycle review, LC1). The oracle: the log files in the
// directory, and the size compact reports against the directory's.
func TestCompactFreesThePurgesLogs(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	for seed, cmd := range []string{"build", "build", "build"} {
		corpus := filepath.Join(dir, fmt.Sprint("c", seed, ".jsonl"))
		mustRun(t, "gen", "--n", "20000", "--seed", fmt.Sprint(seed+1), "--out", corpus)
		mustRun(t, cmd, "--db", idx, "--compact", "never", corpus) // NB: every document replaced: a build leaves the lists it empties
	}
	logs := func() []string {
		names, _ := filepath.Glob(filepath.Join(idx, "*.log"))
		return names
	}
	out, _ := mustRun(t, "compact", "--db", idx)
	if n := len(logs()); n > 1 {
		t.Errorf("after compact, %d write-ahead logs: %q (%s)", n, logs(), out)
	}
	if strings.Contains(out, "write-ahead logs") {
		t.Errorf("compact's summary: %s", out)
	}
	var s struct {
		After uint64 `json:"disk_bytes_after"`
	}
	js, _ := mustRun(t, "compact", "--db", idx, "--output", "json")
	if err := json.Unmarshal([]byte(js), &s); err != nil || s.After == 0 || max(s.After, db.DirBytes(idx))-min(s.After, db.DirBytes(idx)) > 1<<20 {
		t.Errorf("compact --output json: %s (%v); the directory takes %d bytes", js, err, db.DirBytes(idx))
	}
}

// Ensure that a build and an insert of a directory pass over, with a
// note, the entries in it that can hold no document (a pipe, a link to
// nothing), with --delete-missing too, where they failed the run (a
// stale lock link in a watched tree failed a nightly build: an
// operator's review, O2-6); a link to a directory still stops the build
// (TestFilterSkipsDirectoryLinks). The oracle: the documents stored.
func TestDirectoryPassesOverSpecialEntries(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "the quick brown fox jumps over the lazy dog", "b.txt": "a second text, of other words entirely"} {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkfifo(filepath.Join(in, "fifo")); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.Symlink("nowhere", filepath.Join(in, "stale.lock")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, args := range [][]string{
		{"build", "--db", filepath.Join(dir, "built"), in},
		{"build", "--db", filepath.Join(dir, "built"), "--delete-missing", in},
		{"insert", "--db", filepath.Join(dir, "inserted"), in},
	} {
		out, errOut, code := runLine(args, "")
		if code != 0 || !strings.Contains(out, "inserted 2 documents") || !strings.Contains(errOut, "lshdb: skipped "+filepath.Join(in, "fifo")) || !strings.Contains(errOut, "lshdb: skipped "+filepath.Join(in, "stale.lock")) {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if got := storedTexts(t, args[2]); len(got) != 2 || got["a.txt"] == "" || got["b.txt"] == "" {
			t.Errorf("%v stored %v, want a.txt and b.txt", args, got)
		}
	}
}

// Ensure that the advice a TTL write gets on a format 2 sets index that
// keeps its texts, to export them and build anew, makes an index of the
// same parameters when followed as written: a bare build gave one of the
// defaults (0.8 and char shingles for one of 0.6 and words) without the
// metadata (an upgrade review's UPG-2). The oracle: info of both.
func TestFormat2TTLAdviceKeepsTheParameters(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if err := os.CopyFS(idx, os.DirFS("../../testdata/golden/format2/sets")); err != nil {
		t.Fatal(err)
	}
	// NB: the golden index keeps no texts; its manifest says it does, as
	// an index made with --store-text says.
	p, err := pebble.Open(idx, &pebble.Options{Merger: compaction.Merger})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := p.Get(codec.ManifestKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := codec.DecodeManifest(v)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	m.StoreText = true
	enc, _ := codec.EncodeManifest(m)
	if err := p.Set(codec.ManifestKey, enc, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	p.Close()
	in := "../../testdata/cmd/inputs/docs.jsonl"
	_, errOut, code := runLine([]string{"insert", "--db", idx, "--ttl", "1h", in}, "")
	_, advice, found := strings.Cut(errOut, ", then lshdb build ")
	if code == 0 || !found || !strings.HasSuffix(advice, " FILE)\n") {
		t.Fatalf("insert --ttl on a format 2 sets index: exit %d: %s", code, errOut)
	}
	newIdx := filepath.Join(t.TempDir(), "new")
	args := []string{"build"}
	for _, w := range strings.Fields(strings.TrimSuffix(advice, ")\n")) {
		switch w {
		case "NEWDIR":
			w = newIdx
		case "FILE":
			w = in
		}
		args = append(args, w)
	}
	if _, errOut, code := runLine(args, ""); code != 0 {
		t.Fatalf("the advised build %q: exit %d: %s", args, code, errOut)
	}
	params := func(dir string) map[string]any {
		out, errOut, code := runLine([]string{"info", "--db", dir, "--output", "json"}, "")
		var info map[string]any
		if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil {
			t.Fatalf("info %s: exit %d, %v: %s", dir, code, err, errOut)
		}
		for _, k := range []string{"docs", "format_version", "disk_bytes", "recycled_log_bytes", "log_bytes", "instance", "expected_recall"} {
			delete(info, k)
		}
		return info
	}
	if a, b := params(idx), params(newIdx); !reflect.DeepEqual(a, b) {
		t.Fatalf("the index built as advised has other parameters:\nold %v\nnew %v", a, b)
	}
}

// Ensure that an input of one kind given only the other kind's id or text
// flag is refused, naming the flag it needs, and stores nothing: JSON
// Lines given --text-col (or --id-col), CSV given --text-field, by insert,
// build, dedup and filter. Each was read with its own default, the wrong
// field, without a word (an input review, IN-13). With both flags given
// (inputs of both kinds), each input reads its own: the oracle is the
// texts stored.
func TestFlagsOfTheOtherFormatRefused(t *testing.T) {
	dir := t.TempDir()
	jl := filepath.Join(dir, "tc.jsonl")
	os.WriteFile(jl, []byte(`{"id":"a","url":"u1","body":"the body text of a","text":"the wrong text field"}`+"\n"), 0o644)
	cv := filepath.Join(dir, "tf.csv")
	os.WriteFile(cv, []byte("id,url,body,text\nb,u2,the body text of b,the wrong text column\n"), 0o644)
	for i, c := range []struct {
		args []string
		want string // what stderr holds
	}{
		{[]string{jl, "--text-col", "body"}, "--text-col names the text column of CSV, TSV and Parquet inputs, and " + jl + " is JSON Lines, whose text field --text-field names: give --text-field body"},
		{[]string{jl, "--id-col", "url"}, "--id-col names the id column of CSV, TSV and Parquet inputs, and " + jl + " is JSON Lines, whose id field --id-field names: give --id-field url"},
		{[]string{cv, "--text-field", "body"}, "--text-field names the text field of JSON Lines inputs, and " + cv + " is CSV, whose text column --text-col names: give --text-col body"},
	} {
		for _, cmd := range []string{"insert", "build", "dedup"} {
			idx := filepath.Join(dir, fmt.Sprint(cmd, i))
			args := []string{cmd, "--db", idx}
			if cmd != "dedup" {
				args = append(args, "--store-text")
			}
			_, errOut, code := runLine(append(args, c.args...), "")
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Fatalf("%s %q: exit %d, stderr %q; want exit 2 and %q", cmd, c.args, code, errOut, c.want)
			}
			if _, err := os.Stat(idx); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s %q left %s behind (%v)", cmd, c.args, idx, err)
			}
		}
	}
	idx := filepath.Join(dir, "both")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--store-text", jl, cv, "--text-col", "body", "--text-field", "body"}, ""); code != 0 {
		t.Fatalf("both flags: exit %d, stderr %q", code, errOut)
	}
	if got, want := storedTexts(t, idx), map[string]string{"a": "the body text of a", "b": "the body text of b"}; !maps.Equal(got, want) {
		t.Fatalf("both flags stored %v, want %v", got, want)
	}
	out := filepath.Join(dir, "kept.jsonl")
	if _, errOut, code := runLine([]string{"filter", "--db", idx, "--out", out, jl, "--text-col", "body"}, ""); code != 2 || !strings.Contains(errOut, "give --text-field body") {
		t.Fatalf("filter: exit %d, stderr %q", code, errOut)
	}
	// A JSON Lines file after a CSV one is refused before the CSV's
	// documents are written (a read-through's RT10-6), and a JSON Lines
	// stream on stdin as it opens.
	for _, cmd := range []string{"insert", "dedup"} {
		mixed := filepath.Join(dir, "mixed-"+cmd)
		_, errOut, code := runLine([]string{cmd, "--db", mixed, cv, jl, "--text-col", "body"}, "")
		if _, err := os.Stat(mixed); code != 2 || !strings.Contains(errOut, "give --text-field body") || strings.Contains(errOut, "committed") || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s of a CSV then a JSON Lines file: exit %d, stderr %q, the index %v", cmd, code, errOut, err)
		}
	}
	raw, _ := os.ReadFile(jl)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "stdin"), "-", "--text-col", "body"}, string(raw)); code != 2 || !strings.Contains(errOut, "give --text-field body") {
		t.Fatalf("JSON Lines on stdin: exit %d, stderr %q", code, errOut)
	}
}

// Ensure that --rejects is compressed as its name says (.gz, .zst), as
// every other output is, and holds the bad records as read: a .gz was
// written plain (an input review, IN-7). The oracle is the bad lines of
// the input, read back through the decompressor of the name.
func TestRejectsCompressedByName(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	bad := "not json\n" + `{"id":"x"}` + "\n"
	os.WriteFile(in, []byte(docLine("a", "a good text one")+"\nnot json\n"+docLine("b", "a good text two")+"\n"+`{"id":"x"}`+"\n"), 0o644)
	for _, name := range []string{"r.jsonl.gz", "r.jsonl.zst", "r.jsonl"} {
		rej := filepath.Join(dir, name)
		if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "idx"), "--skip-bad", "--rejects", rej, in}, ""); code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", name, code, errOut)
		}
		raw, err := os.ReadFile(rej)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = bytes.NewReader(raw)
		switch filepath.Ext(name) {
		case ".gz":
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatalf("%s is not gzip: %v (%q)", name, err, raw)
			}
		case ".zst":
			zr, err := zstd.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			r = zr
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != bad {
			t.Fatalf("%s holds %q (%v), want %q", name, got, err, bad)
		}
	}
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "idx"), "--skip-bad", "--rejects", filepath.Join(dir, "r.xz"), in}, ""); code != 2 || !strings.Contains(errOut, "names xz compression") {
		t.Fatalf(".xz: exit %d, stderr %q", code, errOut)
	}
}

// Ensure that a dataset's folder as Hugging Face ships one (README.md
// beside data/*.parquet, here with Spark's _SUCCESS too) is refused
// without --format, as a folder of record files only is, and read whole
// with --format parquet, its README and marker passed over: the oracle is
// the index of the shard given alone. Without --format it stored the
// README as the only document, exit 0; with it, the README stopped the
// read (an input review, IN-14).
func TestDatasetFolderWithReadme(t *testing.T) {
	dir := t.TempDir()
	shard, err := os.ReadFile("../../testdata/parquet-arrow/docs.parquet")
	if err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "hf")
	os.MkdirAll(filepath.Join(hf, "data"), 0o755)
	os.WriteFile(filepath.Join(hf, "README.md"), []byte("# a dataset card\n\nlicense: cc-by-4.0\n"), 0o644)
	os.WriteFile(filepath.Join(hf, "data", "train-00000-of-00001.parquet"), shard, 0o644)
	os.WriteFile(filepath.Join(hf, "data", "_SUCCESS"), nil, 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "none"), hf}, ""); code != 2 || !strings.Contains(errOut, "holds record files only (data/train-00000-of-00001.parquet)") {
		t.Fatalf("without --format: exit %d, stderr %q", code, errOut)
	}
	alone, whole := filepath.Join(dir, "alone"), filepath.Join(dir, "whole")
	if _, errOut, code := runLine([]string{"insert", "--db", alone, "--store-text", filepath.Join(hf, "data", "train-00000-of-00001.parquet")}, ""); code != 0 {
		t.Fatalf("the shard alone: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := runLine([]string{"insert", "--db", whole, "--store-text", "--format", "parquet", hf}, "")
	if code != 0 || !strings.Contains(errOut, "README.md: a dataset's documentation") || !strings.Contains(errOut, "_SUCCESS: not a Parquet file") {
		t.Fatalf("--format parquet: exit %d, stderr %q", code, errOut)
	}
	want := storedTexts(t, alone)
	// The two files passed over are no bad records (a read-through,
	// RT10-10: they read "2 bad records skipped").
	if wantOut := fmt.Sprintf("inserted %d documents (0 replaced stored ones); 0 repeated ids in the input (last one wins), 0 empty texts skipped, 0 bad records skipped, 2 files passed over (named above)\n", len(want)); out != wantOut {
		t.Errorf("--format parquet said %q, want %q", out, wantOut)
	}
	out, _, code = runLine([]string{"build", "--db", filepath.Join(dir, "built"), "--output", "json", "--format", "parquet", hf}, "")
	var sum struct {
		Inserted   int `json:"inserted"`
		BadSkipped int `json:"bad_skipped"`
		PassedOver int `json:"files_passed_over"`
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Inserted != len(want) || sum.BadSkipped != 0 || sum.PassedOver != 2 {
		t.Errorf("build --output json: exit %d, %+v (%v) from %q", code, sum, err, out)
	}
	if _, errOut, code := runLine([]string{"dedup", "--db", filepath.Join(dir, "dedup"), "--format", "parquet", hf}, ""); code != 0 || !strings.Contains(errOut, "(2 files passed over)") || strings.Contains(errOut, "records skipped") {
		t.Errorf("dedup: exit %d, stderr %q", code, errOut)
	}
	if got := storedTexts(t, whole); len(want) < 100 || !maps.Equal(got, want) {
		t.Fatalf("--format parquet stored %d documents, the shard alone %d", len(got), len(want))
	}
	// Records skipped and files passed over (here a dataset card) are said in one
	// parenthesis: "(1 record skipped) (1 file passed over)" read as two
	// afterthoughts.
	mixed := filepath.Join(dir, "mixed")
	os.MkdirAll(mixed, 0o755)
	os.WriteFile(filepath.Join(mixed, "a.jsonl"), []byte("{\"id\":\"a\",\"text\":\"one document of some words\"}\n{\"id\":\n"), 0o644)
	os.WriteFile(filepath.Join(mixed, "README.md"), []byte("# a dataset card\n"), 0o644)
	if _, errOut, code := runLine([]string{"dedup", "--db", filepath.Join(dir, "dedup2"), "--skip-bad", "--format", "jsonl", mixed}, ""); code != 0 || !strings.Contains(errOut, "(1 record skipped, 1 file passed over)") {
		t.Errorf("dedup of a bad record and a dataset card: exit %d, stderr %q", code, errOut)
	}
	// filter reads the folder the build read (a read-through's RT10-2).
	kept := filepath.Join(dir, "kept.parquet")
	if _, errOut, code := runLine([]string{"filter", "--db", whole, "--format", "parquet", "--out", kept, hf}, ""); code != 0 || !strings.Contains(errOut, "README.md: a dataset's documentation") {
		t.Fatalf("filter of the folder: exit %d, stderr %q", code, errOut)
	}
	// A shard named like documentation is read (README.jsonl, and a
	// split named licenses), a README.md passed over (RT10-1); a Parquet
	// shard without the name (Spark's part-00000) makes the folder one
	// of record files (RT10-4); a folder of Markdown texts with one CSV
	// is read as texts, as before (RT10-3).
	js := filepath.Join(dir, "js")
	os.MkdirAll(js, 0o755)
	os.WriteFile(filepath.Join(js, "README.md"), []byte("# the card\n"), 0o644)
	os.WriteFile(filepath.Join(js, "README.jsonl"), []byte(docLine("r", "a record in a file named readme")+"\n"), 0o644)
	os.WriteFile(filepath.Join(js, "licenses.jsonl"), []byte(docLine("l", "a record of the licenses split")+"\n"), 0o644)
	idx := filepath.Join(dir, "js-idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--store-text", "--format", "jsonl", js}, ""); code != 0 {
		t.Fatalf("shards named like documentation: exit %d, stderr %q", code, errOut)
	}
	if got, want := storedTexts(t, idx), map[string]string{"r": "a record in a file named readme", "l": "a record of the licenses split"}; !maps.Equal(got, want) {
		t.Fatalf("shards named like documentation stored %v, want %v", got, want)
	}
	spark := filepath.Join(dir, "spark")
	os.MkdirAll(filepath.Join(spark, "out"), 0o755)
	os.WriteFile(filepath.Join(spark, "README.md"), []byte("# the card\n"), 0o644)
	os.WriteFile(filepath.Join(spark, "out", "part-00000"), shard, 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "spark-idx"), spark}, ""); code != 2 || !strings.Contains(errOut, "holds record files only (out/part-00000)") {
		t.Fatalf("a Parquet part file without its name: exit %d, stderr %q", code, errOut)
	}
	md := filepath.Join(dir, "md")
	os.MkdirAll(md, 0o755)
	for i := range 3 {
		os.WriteFile(filepath.Join(md, fmt.Sprintf("page%d.md", i)), []byte(fmt.Sprintf("# page %d about topic %d\n", i, i)), 0o644)
	}
	os.WriteFile(filepath.Join(md, "table.csv"), []byte("id,value\na,1\n"), 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "md-idx"), md}, ""); code != 0 || len(storedTexts(t, filepath.Join(dir, "md-idx"))) != 4 {
		t.Fatalf("a folder of Markdown texts and a CSV: exit %d, stderr %q", code, errOut)
	}
}

// Ensure that drop of a Redis URL whose index name no index can have says
// only that (exit 2): it said the index's writers could not be counted
// and to add --force, which then said the URL was bad (an operator's
// review of Redis, RC-4). No server is needed: the name is refused first.
func TestDropOfAnInvalidRedisName(t *testing.T) {
	for _, args := range [][]string{{"drop", "--db", "redis://127.0.0.1:1/a*b", "--yes"}, {"drop", "--db", "redis+cluster://127.0.0.1:1/a b", "--yes", "--force"}} {
		_, errOut, code := runLine(args, "")
		if code != 2 || !strings.Contains(errOut, "the index name") || strings.Contains(errOut, "--force") || strings.Contains(errOut, "could not be counted") {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// Ensure that --id-from line refuses, before anything is written (exit 2,
// no index left), two files of a directory read with --format whose base
// names are one: found as the second file opened, it stopped an insert
// after the first one's documents were committed, exit 1 (an input
// review, IN-8). Files the reader passes over (a README in each folder)
// clash with nothing: the oracle is the documents stored.
func TestLineIDsOfADirectoryCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(dir, "sd")
	os.MkdirAll(filepath.Join(sd, "sub"), 0o755)
	os.WriteFile(filepath.Join(sd, "a.jsonl"), []byte(`{"text":"a text of the top folder"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(sd, "sub", "a.jsonl"), []byte(`{"text":"a text of the folder below"}`+"\n"), 0o644)
	idx := filepath.Join(dir, "idx")
	_, errOut, code := runLine([]string{"insert", "--db", idx, "--format", "jsonl", "--id-from", "line", sd}, "")
	if _, err := os.Stat(idx); code != 2 || !strings.Contains(errOut, "have the same base name") || strings.Contains(errOut, "committed") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exit %d, stderr %q, the index %v", code, errOut, err)
	}
	os.Remove(filepath.Join(sd, "sub", "a.jsonl"))
	os.WriteFile(filepath.Join(sd, "sub", "b.jsonl"), []byte(`{"text":"a text of the folder below"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(sd, "README.md"), []byte("# a card\n"), 0o644)
	os.WriteFile(filepath.Join(sd, "sub", "README.md"), []byte("# a card\n"), 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--store-text", "--format", "jsonl", "--id-from", "line", sd}, ""); code != 0 {
		t.Fatalf("without a clash: exit %d, stderr %q", code, errOut)
	}
	if got, want := storedTexts(t, idx), map[string]string{"a.jsonl:1": "a text of the top folder", "b.jsonl:1": "a text of the folder below"}; !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}
