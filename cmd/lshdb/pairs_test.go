package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/topk"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that the pairs' heap (topk with pairCmp) keeps exactly the n
// best pairs (best first, ties by ids), as sorting everything and cutting does, and never holds more than
// n: random pairs with many Jaccard ties, for n from 1 past the count.
func TestTopPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var all []db.Pair
	for i := range 500 {
		all = append(all, db.Pair{A: fmt.Sprintf("d%03d", rng.IntN(60)), B: fmt.Sprintf("e%03d", i), Jaccard: float64(rng.IntN(8)) / 8})
	}
	want := slices.Clone(all)
	slices.SortFunc(want, func(x, y db.Pair) int {
		return cmp.Or(cmp.Compare(y.Jaccard, x.Jaccard), strings.Compare(x.A, y.A), strings.Compare(x.B, y.B))
	})
	for _, n := range []int{1, 2, 3, 7, 64, 499, 500, 501, 1000} {
		top := topk.New(n, pairCmp)
		for _, p := range all {
			top.Offer(p)
			if top.Len() > n {
				t.Fatalf("n=%d: holds %d pairs", n, top.Len())
			}
		}
		if got := top.Sorted(); !slices.Equal(got, want[:min(n, len(want))]) {
			t.Fatalf("n=%d: got %v…, want %v…", n, got[:min(3, len(got))], want[:3])
		}
	}
}

// tieFixture builds an index with many pairs and ties: 4 groups of 5
// identical texts (10 pairs at Jaccard 1 each) and near-copies of each.
func tieFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "index")
	tieFixtureIn(t, dir)
	return dir
}

// tieFixtureIn builds tieFixture's index in dir.
func tieFixtureIn(t *testing.T, dir string) {
	t.Helper()
	var in strings.Builder
	base := []string{
		"the quick brown fox jumps over the lazy dog near the river bank",
		"a completely different sentence about a cat sleeping on a warm mat",
		"packages for the debian operating system with many small utilities",
		"near duplicate detection with minhash signatures and banding tables",
	}
	for g, text := range base {
		for i := range 5 {
			fmt.Fprintf(&in, "%s\n", mustJSON(map[string]string{"id": fmt.Sprintf("g%d-%d", g, i), "text": text}))
		}
		fmt.Fprintf(&in, "%s\n", mustJSON(map[string]string{"id": fmt.Sprintf("g%d-edit", g), "text": text + "!"}))
	}
	if _, errOut, code := runLine([]string{"insert", "--db", dir}, in.String()); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
}

// Ensure that a file of pairs --limit is not taken for all the pairs (a
// filter from it removed 10 records where the index's clustering removes
// hundreds), and that a full run's file of the same index is.
func TestPairsLimitFileRefused(t *testing.T) {
	dir := tieFixture(t)
	for _, args := range [][]string{{"--limit", "2"}, nil} {
		out, errOut, code := runLine(append([]string{"pairs", "--db", dir, "--output", "json", "--header"}, args...), "")
		if code != 0 {
			t.Fatalf("pairs %v: %d %s", args, code, errOut)
		}
		_, errOut, code = runLine([]string{"clusters", "--db", dir, "--from", "-", "--output", "json"}, out)
		if limited := args != nil; limited != (code != 0) || limited && !strings.Contains(errOut, "pairs --limit 2") {
			t.Errorf("clusters --from a file of pairs %v: exit %d, %s", args, code, errOut)
		}
	}
}

// Ensure that a pairs file is refused on an index built anew in its
// index's place, whose counts are the same (the documents are), and taken
// on a backup of its index, which is the same index.
func TestPairsFileOfAnotherIndex(t *testing.T) {
	dir := tieFixture(t)
	pairsFile := filepath.Join(t.TempDir(), "pairs.jsonl")
	out, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header"}, "")
	if code != 0 {
		t.Fatalf("pairs: %d %s", code, errOut)
	}
	if err := os.WriteFile(pairsFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	clusters := func(index string) (string, int) {
		_, errOut, code := runLine([]string{"clusters", "--db", index, "--from", pairsFile, "--output", "json"}, "")
		return errOut, code
	}
	if errOut, code := clusters(dir); code != 0 {
		t.Fatalf("clusters on the index the file was made on: %d %s", code, errOut)
	}
	copyDir := filepath.Join(t.TempDir(), "copy")
	if _, errOut, code := runLine([]string{"backup", "--db", dir, "--to", copyDir}, ""); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if errOut, code := clusters(copyDir); code != 0 {
		t.Fatalf("clusters on a backup of the index the file was made on: %d %s", code, errOut)
	}
	var orig struct {
		Docs     int
		Instance string
	}
	if out, _, _ := runLine([]string{"info", "--db", dir, "--output", "json"}, ""); json.Unmarshal([]byte(out), &orig) != nil || orig.Instance == "" {
		t.Fatalf("info of the original: %s", out)
	}
	if out, _, _ := runLine([]string{"info", "--db", copyDir}, ""); !strings.Contains(out, fmt.Sprintf("backup of: instance %s when it held %d documents of ", orig.Instance, orig.Docs)) || strings.Contains(out, "instance: "+orig.Instance) {
		t.Fatalf("info of the backup does not name its origin, or has the original's instance:\n%s", out)
	}
	// The backup and its original written apart, one write each (the
	// operator's case: their counts are the same again, and filter
	// removed a record by the other copy's pair): each file is refused
	// on the other index.
	insert := func(index, line string) {
		t.Helper()
		if _, errOut, code := runLine([]string{"insert", "--db", index, "-"}, line+"\n"); code != 0 {
			t.Fatalf("insert into %s: %d %s", index, code, errOut)
		}
	}
	insert(dir, `{"id":"later","text":"a document written to the original after its backup"}`)
	laterFile := filepath.Join(t.TempDir(), "later.jsonl")
	if out, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header"}, ""); code != 0 {
		t.Fatalf("pairs: %d %s", code, errOut)
	} else if err := os.WriteFile(laterFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runLine([]string{"clusters", "--db", copyDir, "--from", laterFile}, "")
	if code != 1 || !strings.Contains(errOut, "stale pairs file") || !strings.Contains(errOut, "another state of it") {
		t.Fatalf("a file of the original written since, on its backup: exit %d, %s; want it refused", code, errOut)
	}
	insert(copyDir, `{"id":"own","text":"a document written to the backup, not to the original"}`)
	for _, f := range []string{pairsFile, laterFile} {
		_, errOut, code := runLine([]string{"clusters", "--db", copyDir, "--from", f}, "")
		if code != 1 || !strings.Contains(errOut, "stale pairs file") || !strings.Contains(errOut, "written since the backup") {
			t.Fatalf("%s on a backup written since: exit %d, %s; want it refused", filepath.Base(f), code, errOut)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	tieFixtureIn(t, dir)
	errOut, code = clusters(dir)
	if code != 1 || !strings.Contains(errOut, "stale pairs file") || !strings.Contains(errOut, "another index") {
		t.Fatalf("clusters on an index built anew: exit %d, %s; want the file refused as made on another index", code, errOut)
	}
}

// Ensure that pairs --limit N prints the first N lines of the full sorted
// output, for every N (ties at Jaccard 1 are broken by ids alike).
func TestPairsLimitIsPrefix(t *testing.T) {
	dir := tieFixture(t)
	for _, format := range []string{"json", "table"} {
		full, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", format}, "")
		if code != 0 {
			t.Fatalf("pairs: %d %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(full), "\n")
		if format == "table" {
			lines = lines[1:] // the header
		}
		// 4 groups: C(6,2) = 15 pairs each, the edited copy included
		// (6 texts of 60+ characters differing by one: J > 0.9).
		if len(lines) != 60 {
			t.Fatalf("%d pairs, want 60:\n%s", len(lines), full)
		}
		for n := 1; n <= len(lines)+1; n++ {
			if format == "table" && n > 3 && n%10 != 0 && n < len(lines)-1 {
				continue // the JSON run covers every n
			}
			out, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", format, "--limit", fmt.Sprint(n)}, "")
			if code != 0 {
				t.Fatalf("--limit %d: %d %s", n, code, errOut)
			}
			got := strings.Split(strings.TrimSpace(out), "\n")
			if format == "table" {
				got = got[1:]
			}
			if format == "json" && !slices.Equal(got, lines[:min(n, len(lines))]) {
				t.Fatalf("--limit %d:\n%s\nwant the first %d of\n%s", n, out, n, full)
			}
			// Table columns align per output, so compare the fields.
			for i := range got {
				if i >= len(lines) || !slices.Equal(strings.Fields(got[i]), strings.Fields(lines[i])) {
					t.Fatalf("--limit %d line %d: %q, want %q", n, i, got[i], lines[min(i, len(lines)-1)])
				}
			}
			if len(got) != min(n, len(lines)) {
				t.Fatalf("--limit %d: %d lines", n, len(got))
			}
		}
	}
}

// arrivals is a writer that records how many bytes have arrived.
type arrivals struct {
	bytes.Buffer
	writes int
}

func (w *arrivals) Write(p []byte) (int, error) { w.writes++; return w.Buffer.Write(p) }

// Ensure that pairs --sort=false writes its table while the pairs are still
// coming (bounded memory), not all at the end: after 2,500 of 3,000 pairs,
// at least 2,000 rows have reached the writer; in the end every row has.
func TestPairsTableStreams(t *testing.T) {
	w := &arrivals{}
	a := &app{ctx: context.Background(), stdout: w, stderr: io.Discard, output: "table"}
	seen := -1
	seq := func(yield func(db.Pair, error) bool) {
		for i := range 3000 {
			if i == 2500 {
				seen = strings.Count(w.String(), "\n")
			}
			if !yield(db.Pair{A: fmt.Sprintf("a%d", i), B: fmt.Sprintf("b%d", i), Jaccard: 0.9}, nil) {
				return
			}
		}
	}
	if err := a.streamPairs(seq, nil, false); err != nil {
		t.Fatal(err)
	}
	if seen < 2000 {
		t.Fatalf("after 2,500 pairs, %d lines had been written", seen)
	}
	sc := bufio.NewScanner(&w.Buffer)
	rows := 0
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); rows > 0 && (len(f) != 3 || f[0] != fmt.Sprintf("a%d", rows-1)) {
			t.Fatalf("row %d: %q", rows, sc.Text())
		}
		rows++
	}
	if rows != 3001 {
		t.Fatalf("%d lines, want a header and 3000 rows", rows)
	}
}

// Ensure that an interrupt during pairs --sort=false stops it after the
// pairs already printed, with a one-line note saying how many: JSON lines
// and the table, with an iteration cancelled after 5 pairs (the 5
// buffered rows are written, the table's with their header; an interrupt
// through the command is TestReadCommandsInterrupted's).
func TestPairsInterruptedMidway(t *testing.T) {
	for _, format := range []string{"json", "table"} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		a := &app{ctx: ctx, stdout: &out, stderr: io.Discard, output: format}
		seq := func(yield func(db.Pair, error) bool) {
			for i := range 100 {
				if i == 5 {
					cancel()
				}
				if !yield(db.Pair{A: fmt.Sprintf("a%d", i), B: "b", Jaccard: 1}, nil) {
					return
				}
			}
		}
		err := a.streamPairs(seq, nil, false)
		if !errors.Is(err, context.Canceled) || err.Error() != "interrupted after 5 pairs" {
			t.Fatalf("%s: %v", format, err)
		}
		rows := strings.Split(strings.TrimSpace(out.String()), "\n")
		if format == "json" && (len(rows) != 5 || rows[4] != `{"a":"a4","b":"b","jaccard":1.0}`) {
			t.Fatalf("json: %q", out.String())
		}
		if format == "table" && (len(rows) != 6 || !strings.HasPrefix(rows[5], "a4 ")) {
			t.Fatalf("table: %q", out.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer written from several goroutines, which
// says on wrote whenever something was written.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Ensure that streamed JSON lines and CSV rows reach the output while the
// pairs stop coming (a long stretch of verification with no match): the
// three found before the pause are written during it, not held in the
// buffer until the next ones or the end; and that the end still writes
// every line, once.
func TestPairsFlushedWhilePaused(t *testing.T) {
	defer func(d time.Duration) { pairsFlushDelay = d }(pairsFlushDelay)
	pairsFlushDelay = 50 * time.Millisecond
	for _, format := range []string{"json", "csv"} {
		out := &lockedBuffer{wrote: make(chan struct{}, 1)}
		a := &app{ctx: context.Background(), stdout: out, stderr: io.Discard, output: format}
		want := map[string]int{"json": 3, "csv": 4}[format] // CSV: and its header
		seq := func(yield func(db.Pair, error) bool) {
			for i := range 6 {
				if i == 3 {
					// The pause: the lines so far must come out before
					// the pairs go on (or the test times out).
					deadline := time.After(20 * time.Second)
					for strings.Count(out.String(), "\n") < want {
						select {
						case <-out.wrote:
						case <-deadline:
							t.Errorf("%s: during the pause, the output holds %q", format, out.String())
							return
						}
					}
				}
				if !yield(db.Pair{A: fmt.Sprintf("a%d", i), B: "b", Jaccard: 1}, nil) {
					return
				}
			}
		}
		if err := a.streamPairs(seq, nil, false); err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(rows) != want+3 || !strings.Contains(rows[len(rows)-1], "a5") {
			t.Fatalf("%s: at the end, %q", format, out.String())
		}
	}
}

// Ensure that pairs, clusters, query, check, stats and buckets, when
// interrupted, print nothing on stdout (no header, no partial result that
// would look complete) and one line on stderr saying so, with exit 130.
// The index has 300 documents: every scan over its 4,800 posting lists
// meets the cancelled context (the library checks every 1,024 keys).
func TestReadCommandsInterrupted(t *testing.T) {
	f, err := os.Open("../../testdata/corpora/debian-sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 0; i < 300 && sc.Scan(); i++ {
		in.WriteString(sc.Text() + "\n")
	}
	dir := filepath.Join(t.TempDir(), "index")
	if _, errOut, code := runLine([]string{"insert", "--db", dir}, in.String()); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		args []string
		note string
	}{
		{[]string{"pairs"}, "interrupted after 0 pairs, none printed"},
		{[]string{"pairs", "--sort=false"}, "interrupted after 0 pairs"},
		{[]string{"pairs", "--limit", "3"}, "interrupted after 0 pairs, none printed"},
		{[]string{"clusters"}, "clusters interrupted: nothing printed"},
		{[]string{"query", "--text", "a text"}, "query interrupted: nothing printed"},
		{[]string{"check"}, "check interrupted: no verdict"},
		{[]string{"stats"}, "stats interrupted: nothing printed"},
		{[]string{"buckets"}, "buckets interrupted: nothing printed"},
	} {
		for _, format := range []string{"table", "json"} {
			var out, errOut bytes.Buffer
			args := append([]string{c.args[0], "--db", dir, "--output", format}, c.args[1:]...)
			code := run(ctx, args, strings.NewReader(""), &out, &errOut)
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if code != 130 || out.Len() != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "lshdb: "+c.note) ||
				strings.Contains(lines[0], "context canceled") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
			}
		}
	}
}

// Ensure that a pairs file made while the index was empty is refused
// once documents are written: its header's written count (0) was left
// out of the file, which then read as one of an earlier build, and
// filter kept every near-duplicate of the documents written since.
func TestPairsFileOfAnEmptyIndex(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "create", "--db", idx)
	pairs, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--header"}, "")
	if code != 0 {
		t.Fatalf("pairs of the empty index: exit %d: %s", code, errOut)
	}
	if !strings.Contains(pairs, `"written":0`) {
		t.Errorf("the header does not say 0 documents were written: %s", pairs)
	}
	in := `{"id":"a","text":"the quick brown fox jumps over the lazy dog near the river"}` + "\n" +
		`{"id":"b","text":"the quick brown fox jumps over the lazy dog near the river!"}` + "\n"
	if _, errOut, code := runLine([]string{"insert", "--db", idx}, in); code != 0 {
		t.Fatalf("insert: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"clusters", "--db", idx, "--from", "-"}, {"filter", "--db", idx, "--from", "-", "--out", filepath.Join(t.TempDir(), "kept.jsonl"), "/dev/null"}} {
		_, errOut, code := runLine(args, pairs)
		if code == 0 || !strings.Contains(errOut, "stale pairs file") || !strings.Contains(errOut, "held 0 documents of 0 written") {
			t.Errorf("%s --from a file of the empty index: exit %d: %s", args[0], code, errOut)
		}
	}
}

// Ensure that pairs --clusters FILE with a path that cannot be written
// fails before the run: it ran every pair out first, and the pairs file
// it left had no end line.
func TestPairsClustersFileCheckedFirst(t *testing.T) {
	dir := tieFixture(t)
	out, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header", "--clusters", filepath.Join(t.TempDir(), "missing", "c.jsonl")}, "")
	if code == 0 || !strings.Contains(errOut, "--clusters") || out != "" {
		t.Errorf("pairs --clusters into a missing directory: exit %d, %d bytes out: %s", code, len(out), errOut)
	}
	ok := filepath.Join(t.TempDir(), "c.jsonl")
	if _, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--clusters", ok}, ""); code != 0 {
		t.Fatalf("pairs --clusters: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(ok); err != nil || !strings.Contains(string(b), `"header"`) {
		t.Errorf("the clusters file: %v %q", err, b)
	}
}

// Ensure that pairs --clusters FILE compresses as the name says (.gz,
// .zst), as filter's and export's outputs do: clusters.jsonl.gz held
// plain JSON Lines, which the next step of a nightly job could not read.
// Oracle: the plain file's clusters (the header and end line hold times),
// read back with Go's own gzip reader.
func TestPairsClustersFileCompressed(t *testing.T) {
	dir := tieFixture(t)
	out := t.TempDir()
	lines := func(b []byte) []string {
		ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(ls) < 3 || !strings.HasPrefix(ls[0], `{"header"`) || !strings.HasPrefix(ls[len(ls)-1], `{"end"`) {
			t.Fatalf("a clusters file of %d lines, the first %q: want a header, clusters and an end line", len(ls), ls[0])
		}
		return ls[1 : len(ls)-1] // NB: the header and end line say when and how long
	}
	read := map[string]func(f *os.File) ([]byte, error){
		"c.jsonl": func(f *os.File) ([]byte, error) { return io.ReadAll(f) },
		"c.jsonl.gz": func(f *os.File) ([]byte, error) {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return nil, err
			}
			return io.ReadAll(zr)
		},
		"c.jsonl.zst": func(f *os.File) ([]byte, error) {
			zr, err := zstd.NewReader(f)
			if err != nil {
				return nil, err
			}
			defer zr.Close()
			return io.ReadAll(zr)
		},
	}
	var want []string
	for _, name := range []string{"c.jsonl", "c.jsonl.gz", "c.jsonl.zst"} {
		path := filepath.Join(out, name)
		if _, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header", "--clusters", path}, ""); code != 0 {
			t.Fatalf("pairs --clusters %s: exit %d: %s", name, code, errOut)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := read[name](f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := lines(b); want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("%s holds\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// Ensure that a pairs file is read as every input is, gzipped or with a
// byte order mark (both were refused as "not a JSON object"), and that an
// empty one, what a pairs that failed before its first line leaves, is
// taken with a note (it was taken silently, as a night without pairs).
func TestPairsFileDecodedAndEmptyNoted(t *testing.T) {
	dir := tieFixture(t)
	pairs, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header"}, "")
	if code != 0 || strings.Count(pairs, `"jaccard"`) == 0 {
		t.Fatalf("pairs: exit %d: %s", code, errOut)
	}
	want, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", "-", "--output", "json"}, pairs)
	if code != 0 || want == "" {
		t.Fatalf("clusters: exit %d: %s", code, errOut)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(pairs))
	zw.Close()
	tmp := t.TempDir()
	files := map[string][]byte{"pairs.jsonl.gz": gz.Bytes(), "bom.jsonl": append([]byte("\ufeff"), pairs...)}
	for name, b := range files {
		f := filepath.Join(tmp, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", f, "--output", "json"}, "")
		if code != 0 || got != want {
			t.Errorf("clusters --from %s: exit %d %s\n%s, want\n%s", name, code, errOut, got, want)
		}
	}
	empty := filepath.Join(tmp, "empty.jsonl")
	os.WriteFile(empty, []byte("\n"), 0o644)
	out, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", empty, "--output", "json"}, "")
	if code != 0 || strings.Contains(out, "members") || !strings.Contains(errOut, "empty.jsonl holds no pairs and no header line") {
		t.Errorf("clusters --from an empty file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Ensure that a pairs file without a header is taken with a note that it
// cannot be checked (a stale one was taken silently).
func TestPairsFileWithoutHeaderNoted(t *testing.T) {
	dir := tieFixture(t)
	pairs, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("pairs: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"clusters", "--db", dir, "--from", "-"}, {"clusters", "--db", dir, "--from", "-", "--output", "json"}} {
		_, errOut, code := runLine(args, pairs)
		if code != 0 || !strings.Contains(errOut, "stdin has no header line") {
			t.Errorf("%v of a file without a header: exit %d: %s", args, code, errOut)
		}
	}
}

// Ensure that pairs of an index that stores signatures only (storage
// none) say in each result that the similarity is an estimate: each JSON
// line has estimate_only, the table's and CSV's column is ESTIMATE; that
// clusters --from reads such a file as any other (the same clusters as
// clusters of the index); and that a text index's pairs say nothing of it.
func TestPairsEstimatesSaidInEachResult(t *testing.T) {
	dir := t.TempDir()
	file := barDocs(t, dir, 300)
	for _, storage := range []string{"none", "text"} {
		idx := filepath.Join(dir, storage)
		if _, errOut, code := runLine([]string{"create", "--db", idx, "--storage", storage}, ""); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := runLine([]string{"insert", "--db", idx, file}, ""); code != 0 {
			t.Fatal(errOut)
		}
		js, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json"}, "")
		if code != 0 || js == "" {
			t.Fatalf("%s: exit %d: %s", storage, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(js), "\n")
		marked := 0
		for _, l := range lines {
			if strings.Contains(l, `"estimate_only":true`) {
				marked++
			}
			// The estimate is in estimate too, as query and explain give
			// it (SH9), the same number as jaccard.
			var pl struct {
				Jaccard  float64  `json:"jaccard"`
				Estimate *float64 `json:"estimate"`
			}
			if err := json.Unmarshal([]byte(l), &pl); err != nil || (pl.Estimate != nil) != (storage == "none") || pl.Estimate != nil && *pl.Estimate != pl.Jaccard {
				t.Errorf("%s: line %s (%v)", storage, l, err)
			}
		}
		// And so does the header (a recall review: it said storage none
		// alone).
		hd, _, _ := runLine([]string{"pairs", "--db", idx, "--output", "json", "--header"}, "")
		if first := strings.SplitN(hd, "\n", 2)[0]; strings.Contains(first, `"estimate_only":true`) != (storage == "none") {
			t.Errorf("%s: header %s", storage, first)
		}
		// And --stats, which said "verified" of estimates (a recall review).
		_, statsErr, _ := runLine([]string{"pairs", "--db", idx, "--stats", "--output", "json"}, "")
		if est := strings.Contains(statsErr, " distinct estimated, ") && strings.Contains(statsErr, " matched by their estimate, "); est != (storage == "none") || strings.Contains(statsErr, " distinct verified, ") == est {
			t.Errorf("%s: pairs --stats: %s", storage, statsErr)
		}
		// And so does each cluster (a review's U1: a note on stderr alone).
		cls, _, _ := runLine([]string{"clusters", "--db", idx, "--output", "json"}, "")
		if n, all := strings.Count(cls, `"estimate_only":true`), strings.Count(cls, "\n"); all == 0 || storage == "none" && n != all || storage == "text" && n != 0 {
			t.Errorf("%s: %d of %d clusters say estimate_only", storage, n, all)
		}
		table, _, _ := runLine([]string{"pairs", "--db", idx}, "")
		csv, _, _ := runLine([]string{"pairs", "--db", idx, "--output", "csv"}, "")
		want, col, head, rowEnd := 0, "JACCARD", "a,b,jaccard\n", ""
		if storage == "none" {
			// NB: the CSV's rows say it too (O4: a note on stderr alone).
			want, col, head, rowEnd = len(lines), "ESTIMATE", "a,b,jaccard,estimate_only\n", ",true"
		}
		rows := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")[1:]
		if len(rows) != len(lines) || slices.ContainsFunc(rows, func(r string) bool { return strings.HasSuffix(r, ",true") != (rowEnd != "") }) {
			t.Errorf("%s: csv rows %q", storage, rows)
		}
		if marked != want || !strings.HasPrefix(table, "A  ") || !strings.Contains(strings.SplitN(table, "\n", 2)[0], col) ||
			!strings.HasPrefix(csv, head) {
			t.Errorf("%s: %d of %d lines say estimate_only (want %d); table header %q, csv header %q", storage, marked, len(lines), want,
				strings.SplitN(table, "\n", 2)[0], strings.SplitN(csv, "\n", 2)[0])
		}
		pf := filepath.Join(dir, storage+".pairs")
		if err := os.WriteFile(pf, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		from, errOut, code := runLine([]string{"clusters", "--db", idx, "--from", pf}, "")
		direct, _, _ := runLine([]string{"clusters", "--db", idx}, "")
		if code != 0 || from != direct {
			t.Errorf("%s: clusters --from the pairs: exit %d %s\n%s\nwant\n%s", storage, code, errOut, from, direct)
		}
	}
}

// Ensure that --memory bounds pairs and clusters: a budget of 1 MiB spills
// (--stats says so) and gives the same pairs and clusters, byte for byte,
// as the default budget, which keeps everything in memory; a budget below
// 1 MiB, or beside clusters --from, is a usage error.
func TestPairsMemoryFlag(t *testing.T) {
	in, idx := genPairsFixture(t)
	pairs, stats := mustRun(t, "pairs", "--db", idx, "--output", "csv", "--stats", "--progress", "none")
	if !strings.Contains(stats, "spilled to disk: false") || strings.Count(pairs, "\n") < 500 {
		t.Fatalf("default budget: %d lines, stats %q", strings.Count(pairs, "\n"), stats)
	}
	small, stats := mustRun(t, "pairs", "--db", idx, "--output", "csv", "--stats", "--progress", "none", "--memory", "1")
	if !strings.Contains(stats, "spilled to disk: true") {
		t.Fatalf("--memory 1: stats %q", stats)
	}
	if small != pairs {
		t.Fatalf("--memory 1 gave other pairs than the default budget")
	}
	clusters, _ := mustRun(t, "clusters", "--db", idx, "--output", "json", "--progress", "none")
	smallClusters, _ := mustRun(t, "clusters", "--db", idx, "--output", "json", "--progress", "none", "--memory", "1")
	if smallClusters != clusters || clusters == "" {
		t.Fatalf("--memory 1 gave other clusters than the default budget")
	}
	for _, args := range [][]string{
		{"pairs", "--db", idx, "--memory", "0"},
		{"clusters", "--db", idx, "--memory", "-5"},
		{"clusters", "--db", idx, "--from", in, "--memory", "64"},
	} {
		if _, errOut, code := runLine(args, ""); code != 2 || !strings.Contains(errOut, "--memory") {
			t.Errorf("%q: exit %d, %q", args, code, errOut)
		}
	}
}

// genPairsFixture generates 4,000 documents from the debian sample and
// builds an index of them at t = 0.5: 1,038 pairs among 390,395
// candidate pairs. It returns the input and the index.
func genPairsFixture(t *testing.T) (in, idx string) {
	t.Helper()
	dir := t.TempDir()
	in, idx = filepath.Join(dir, "docs.jsonl"), filepath.Join(dir, "index")
	mustRun(t, "gen", "--n", "4000", "--seed", "3", "--out", in, "--source", "../../testdata/corpora/debian-sample/docs.jsonl")
	mustRun(t, "build", "--db", idx, "--threshold", "0.5", "--progress", "none", in)
	return in, idx
}

// cancelOnWrite cancels a context at the first write it receives.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) { w.cancel(); return w.Buffer.Write(p) }

// Ensure that an interrupt while pairs --sort=false --output json streams
// stops it, through the command, after the lines already written: the
// interrupt comes with the first write (the first buffered lines: a
// thousand, or fewer after a second), and the command exits 130 saying
// how many pairs it printed, which is what stdout holds.
func TestPairsInterruptedThroughCommand(t *testing.T) {
	_, idx := genPairsFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &cancelOnWrite{cancel: cancel}
	var errOut bytes.Buffer
	code := run(ctx, []string{"pairs", "--db", idx, "--sort=false", "--output", "json", "--progress", "none"}, strings.NewReader(""), out, &errOut)
	lines := strings.Count(out.String(), "\n")
	if code != 130 || lines == 0 || lines >= 1038 || errOut.String() != fmt.Sprintf("lshdb: interrupted after %d pairs\n", lines) {
		t.Fatalf("exit %d, %d lines, stderr %q", code, lines, errOut.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var p pairJSON
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.A == "" || p.B == "" || p.Jaccard < 0.5 {
			t.Fatalf("line %q: %v", l, err)
		}
	}
}

// Ensure that an interrupt while pairs prints its sorted output, or
// clusters its clusters, stops the printing: the pairs were all verified
// (the clusters all made), and the loop over them did not look at the
// interrupt (tens of seconds of output after a Ctrl-C; in the shell, a
// statement nothing stopped). What is printed is the start of the whole
// output, the command exits 130, and the message says how much.
func TestInterruptedWhilePrinting(t *testing.T) {
	_, idx := genPairsFixture(t)
	for _, c := range []struct {
		cmd  string
		want string // stderr, with the lines printed and the whole output's
	}{
		{"pairs", "lshdb: interrupted after printing %[1]d of %[2]d pairs\n"},
		{"clusters", "lshdb: clusters interrupted: the first clusters of %[2]d printed\n"},
	} {
		args := []string{c.cmd, "--db", idx, "--output", "json", "--progress", "none"}
		all, _ := mustRun(t, args...)
		total := strings.Count(all, "\n")
		ctx, cancel := context.WithCancel(context.Background())
		out := &cancelOnWrite{cancel: cancel}
		var errOut bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), out, &errOut)
		lines := strings.Count(out.String(), "\n")
		if code != 130 || lines >= total || !strings.HasPrefix(all, out.String()) || errOut.String() != fmt.Sprintf(c.want, lines, total) {
			t.Errorf("%s: exit %d, %d lines of %d, stderr %q", c.cmd, code, lines, total, errOut.String())
		}
	}
}

// TestClustersTableQuotesIDs: in clusters' table an id holding a
// separator of its line (a space, a comma, a parenthesis, a semicolon or
// a quote) is quoted: "keep x; drop y (0.9000), z (0.9873)" read as two
// members where there was one, "y (0.9000), z". An apostrophe is quoted
// too, as pairs quotes it.
func TestClustersTableQuotesIDs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.jsonl")
	text := "the quick brown fox jumps over the lazy dog near the river bank every single morning"
	if err := os.WriteFile(in, []byte(`{"id":"x","text":"`+text+`"}`+"\n"+`{"id":"y (0.9000), z","text":"`+text+`!"}`+"\n"+`{"id":"o'brien","text":"`+text+`?"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	runOK(t, "insert", "--db", idx, "--progress", "none", in)
	out := runOK(t, "clusters", "--db", idx)
	if !strings.Contains(out, `keep x; drop "y (0.9000), z" (`) || !strings.Contains(out, `"o'brien" (`) {
		t.Errorf("clusters: %q, want the ids with separators quoted", out)
	}
	if pairs := runOK(t, "pairs", "--db", idx); !strings.Contains(pairs, `"o'brien"`) {
		t.Errorf("pairs: %q, want o'brien quoted", pairs)
	}
}

// Ensure that pairs --stats explains a found count above matched plus
// unverified (a newcomer's review, N7): two groups of two identical texts
// whose texts are near-duplicates are 2 identical pairs (unverified), 1
// matched pair of the groups, and 2 + 2×2 = 6 pairs found, by hand.
func TestPairsStatsExplainsGroups(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	x := "the quick brown fox jumps over the lazy dog, and then it runs into the forest to hide from the hunters who follow it"
	y := x + "!"
	docs := docLine("a", x) + "\n" + docLine("a2", x) + "\n" + docLine("b", y) + "\n" + docLine("b2", y) + "\n"
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, docs); code != 0 {
		t.Fatal(errOut)
	}
	out, stats := mustRun(t, "pairs", "--db", idx, "--stats", "--output", "csv")
	if n := strings.Count(out, "\n") - 1; n != 6 {
		t.Fatalf("%d pairs, want 6:\n%s", n, out)
	}
	for _, want := range []string{"2 identical groups (2 pairs reported unverified)", "1 matched", "6 found (3 more than matched plus unverified: a matched pair whose documents have identical copies is found for every pair of copies)"} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats %q lack %q", stats, want)
		}
	}
}

// Ensure that pairs --out and clusters --out write what standard output
// would get (the oracle: the same command without --out), compressed as
// the name says, and that a run that fails leaves the file as it was and
// no temporary file beside it: a redirect left a partial file that read
// as complete.
func TestOutFile(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, c := range []struct {
		args []string
		name string // compressed as it says: decompressedFile reads it
	}{
		{[]string{"pairs", "--output", "csv"}, "p.csv"},
		{[]string{"pairs", "--output", "json", "--sort=false"}, "p.jsonl.gz"},
		{[]string{"pairs", "--limit", "7"}, "p.txt"},
		{[]string{"clusters", "--output", "json"}, "c.jsonl.zst"},
		{[]string{"clusters", "--mode", "centers"}, "c.txt"},
	} {
		args := append([]string{c.args[0], "--db", idx}, c.args[1:]...)
		want, errOut, code := runLine(args, "")
		if code != 0 || want == "" {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		path := filepath.Join(dir, c.name)
		out, errOut, code := runLine(append(args, "--out", path), "")
		if code != 0 || out != "" {
			t.Fatalf("%v --out: exit %d, stdout %q: %s", args, code, out, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := string(decompressedFile(t, path))
		if slices.Contains(args, "--sort=false") {
			// NB: streamed as verified: the same lines, in any order.
			sortLines := func(s string) string { l := strings.Split(s, "\n"); slices.Sort(l); return strings.Join(l, "\n") }
			got, want = sortLines(got), sortLines(want)
		}
		if got != want {
			t.Fatalf("%v --out %s: %d bytes, standard output %d", args, c.name, len(got), len(want))
		}
		// A run that fails (no index there) leaves the file as it was.
		missing := filepath.Join(dir, "nothing")
		args[2] = missing
		if _, errOut, code := runLine(append(args, "--out", path), ""); code == 0 || !strings.Contains(errOut, c.name+" was not written") {
			t.Fatalf("%v --out on no index: exit %d: %s", args, code, errOut)
		}
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, b) {
			t.Fatalf("%v: the failed run changed %s (%v)", args, c.name, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// The same file by two names: a symbolic link to its directory, a
	// relative path, a hard link to a file that exists.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, filepath.Join(dir, "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "exists.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "exists.jsonl"), filepath.Join(dir, "hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, names := range [][2]string{
		{filepath.Join(dir, "x.jsonl"), filepath.Join(link, "x.jsonl")},
		{filepath.Join(dir, "x.jsonl"), rel},
		{filepath.Join(dir, "exists.jsonl"), filepath.Join(dir, "hard.jsonl")},
	} {
		if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--out", names[0], "--clusters", names[1]}, ""); code != 2 || !strings.Contains(errOut, "--out and --clusters are the same file") {
			t.Fatalf("--out %s --clusters %s: exit %d: %s", names[0], names[1], code, errOut)
		}
	}
	// --out with --clusters: both written, the clusters as clusters
	// --output json --header would (its header and end lines aside).
	pairsPath, clustersPath := filepath.Join(dir, "both.csv"), filepath.Join(dir, "both-clusters.jsonl")
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "csv", "--out", pairsPath, "--clusters", clustersPath}, ""); code != 0 {
		t.Fatalf("--out and --clusters: exit %d: %s", code, errOut)
	}
	want, _, _ := runLine([]string{"clusters", "--db", idx, "--output", "json"}, "")
	if b, err := os.ReadFile(clustersPath); err != nil || !strings.Contains(string(b), want) {
		t.Fatalf("--clusters beside --out: %v\n%s", err, b)
	}
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--out", filepath.Join(dir, "x.bz2")}, ""); code != 2 || !strings.Contains(errOut, "bzip2") {
		t.Fatalf("--out .bz2: exit %d: %s", code, errOut)
	}
}

// Ensure that toFile's output, when its run fails after writing part of
// it (an interrupt mid-way, a full disk), is neither at its path nor
// beside it, and a file already there is kept: the oracle is the file's
// bytes before.
func TestToFileFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pairs.csv")
	if err := os.WriteFile(path, []byte("last night's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	out := &outWriter{w: &stdout}
	a := &app{ctx: context.Background(), stdout: out, out: out, stderr: io.Discard}
	err := a.toFile(path, func() error {
		fmt.Fprintln(a.stdout, "a,b,jaccard")
		fmt.Fprintln(a.stdout, "x,y,0.9")
		return fmt.Errorf("interrupted after 1 pair: %w", context.Canceled)
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "pairs.csv was not written") {
		t.Fatalf("toFile: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "last night's\n" {
		t.Fatalf("%s after the failed run: %q, %v", path, b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left in %s: %v", dir, ents)
	}
	if stdout.Len() != 0 || a.stdout != out || a.out != out {
		t.Fatalf("standard output: %q, restored %v", stdout.String(), a.stdout == out && a.out == out)
	}
	// A commit that waits for the file (pairs' --clusters) is told
	// whether it was written, after it was.
	for _, fail := range []bool{true, false} {
		var told []bool
		err := a.toFile(path, func() error {
			fmt.Fprintln(a.stdout, "a,b,jaccard")
			if !a.deferOutCommit(nil, "", func(ok bool) error {
				// NB: after the file's own commit: its new bytes are
				// there when it was written, the old ones when not.
				b, _ := os.ReadFile(path)
				told = append(told, ok, string(b) == map[bool]string{true: "a,b,jaccard\n", false: "last night's\n"}[ok])
				return nil
			}) {
				t.Fatal("deferOutCommit outside toFile's run")
			}
			if fail {
				return errors.New("the run failed")
			}
			return nil
		})
		if (err != nil) != fail || !slices.Equal(told, []bool{!fail, true}) {
			t.Fatalf("fail %v: %v; the commit was told %v", fail, err, told)
		}
	}
	if a.deferOutCommit(nil, "", func(bool) error { return nil }) {
		t.Fatal("deferOutCommit after toFile's run")
	}
}

// Ensure that pairs --clusters is not written when the pairs' --out file
// cannot be (a full disk: /dev/full), and that nothing is left beside it:
// the clusters were committed first, tonight's beside last night's pairs.
func TestOutFileFullClusters(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"pairs", "--db", idx, "--threshold", "0.3", "--out", "/dev/full", "--clusters", filepath.Join(out, "c.jsonl")}, "")
	if code != 1 || !strings.Contains(errOut, "no space left on device") || !strings.Contains(errOut, "c.jsonl was not written either") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("left in %s: %v", out, ents)
	}
}

// Ensure that pairs and clusters refuse an --out whose extension names a
// format other than the one the run writes (exit 2, nothing written), and
// take one that names it, or none (a nightly job's review, B1: pairs --out
// pp.csv wrote the aligned table, exit 0). The oracle: each case's exit
// status, and whether the file is there.
func TestOutNameSaysFormat(t *testing.T) {
	dir := t.TempDir()
	idx, in := filepath.Join(dir, "idx"), filepath.Join(dir, "in.jsonl")
	mustRun(t, "gen", "--n", "200", "--seed", "3", "--out", in)
	mustRun(t, "build", "--db", idx, "--progress", "none", in)
	for _, c := range []struct {
		args []string
		ok   bool
		says string
	}{
		{[]string{"pairs", "--out", "pp.csv"}, false, "names CSV, but pairs writes an aligned text table there (--output table): give --output csv"},
		{[]string{"pairs", "--output", "json", "--out", "pp.csv.gz"}, false, "names CSV, but pairs writes JSON Lines there"},
		{[]string{"pairs", "--output", "tsv", "--out", "p.parquet"}, false, "and never Parquet: name it .tsv"},
		{[]string{"pairs", "--output", "csv", "--out", "p.TSV"}, false, "give --output tsv, or name it .csv"},
		{[]string{"clusters", "--output", "json", "--out", "cl.csv"}, false, "clusters writes JSON Lines there (--output json), and never CSV"},
		{[]string{"clusters", "--out", "cl.jsonl"}, false, "give --output json, or name it .txt"},
		{[]string{"pairs", "--out", "ok-pairs.jsonl", "--output", "json", "--clusters", "cl.csv"}, false, "--clusters " + filepath.Join(dir, "cl.csv") + " names CSV, but pairs writes JSON Lines there: name it .jsonl"},
		{[]string{"pairs", "--output", "tsv", "--out", "ok-tsv.txt"}, true, ""},
		{[]string{"pairs", "--output", "json", "--out", "ok-json.txt"}, true, ""},
		{[]string{"pairs", "--output", "csv", "--out", "ok.csv.gz"}, true, ""},
		{[]string{"pairs", "--output", "tsv", "--out", "ok.tsv"}, true, ""},
		{[]string{"pairs", "--output", "json", "--out", "ok.ndjson.zst"}, true, ""},
		{[]string{"pairs", "--out", "ok.txt"}, true, ""},
		{[]string{"pairs", "--out", "ok-no-extension"}, true, ""},
		{[]string{"pairs", "--out", "ok.out"}, true, ""},
		{[]string{"clusters", "--output", "json", "--out", "ok.json"}, true, ""},
	} {
		// NB: every file name made a path in dir; the last is the one
		// checked.
		args := []string{}
		for i, a := range c.args {
			if i > 0 && (c.args[i-1] == "--out" || c.args[i-1] == "--clusters") {
				a = filepath.Join(dir, a)
			}
			args = append(args, a)
		}
		name := args[len(args)-1]
		args = append(args, "--db", idx)
		_, errOut, code := runLine(args, "")
		_, serr := os.Stat(name)
		switch {
		case c.ok && (code != 0 || serr != nil):
			t.Errorf("%q: exit %d, file %v: %s", c.args, code, serr, errOut)
		case !c.ok && (code != 2 || !strings.Contains(errOut, c.says) || serr == nil):
			t.Errorf("%q: exit %d, file %v: %s; want exit 2, no file, %q", c.args, code, serr, errOut, c.says)
		}
	}
}

// Ensure that clusters' summary counts the documents to drop that are
// below the threshold to the one kept, as components chain them: a chain
// of 100,000 documents, each one word from the last, was "99999 documents
// to drop" with no word that nearly all of them were far from the one
// kept (a review of skewed corpora, K6). The oracle: each member's
// Jaccard to the first, computed by the minhash package from the texts.
func TestClustersNoteCountsChainedMembers(t *testing.T) {
	words := strings.Fields("the quick brown fox jumps over the lazy dog while a small cat watches from the old wooden fence near the river bank today")
	var in strings.Builder
	var texts []string
	for i := range 12 {
		words[i] = fmt.Sprintf("changed%d", i)
		text := strings.Join(words, " ")
		texts = append(texts, text)
		fmt.Fprintf(&in, "{\"id\":\"c%02d\",\"text\":%q}\n", i, text)
	}
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, in.String()); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLine([]string{"clusters", "--db", idx, "--threshold", "0.6", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("clusters: exit %d %s", code, errOut)
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The oracle: each member's Jaccard to the kept one, from the JSON's
	// ids, below 0.6.
	below := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c struct {
			IDs []string `json:"ids"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		at := func(id string) string { n, _ := strconv.Atoi(strings.TrimPrefix(id, "c")); return texts[n] }
		kept := h.Shingler().AppendSet(nil, at(c.IDs[0]))
		for _, id := range c.IDs[1:] {
			if minhash.Jaccard(kept, h.Shingler().AppendSet(nil, at(id))) < 0.6 {
				below++
			}
		}
	}
	if below == 0 {
		t.Fatalf("no member below the threshold: the test's chain is too short\n%s", out)
	}
	if want := fmt.Sprintf("and %d of those to drop are below it to the one kept", below); !strings.Contains(errOut, want) {
		t.Errorf("clusters' note %q, want %q", errOut, want)
	}
	if _, errOut, _ := runLine([]string{"clusters", "--db", idx, "--threshold", "0.6", "--mode", "centers"}, ""); strings.Contains(errOut, "below it") {
		t.Errorf("centers mode's note: %s", errOut)
	}
}

// Ensure that a query that reads many candidates for few matches says
// why and what to do: documents sharing a long text (boilerplate) made a
// query read 170,000 candidates for no match, with no word of the cause
// (a review of skewed corpora, K2). The oracle: the candidates the query
// reports, and a query of distinct texts, which gets no note.
func TestQueryNotesHotBuckets(t *testing.T) {
	defer func(n int) { hotQueryCandidates = n }(hotQueryCandidates)
	hotQueryCandidates = 20
	footer := strings.Repeat("This message and any attachment are confidential and intended solely for the addressee. ", 4)
	var in strings.Builder
	for i := range 60 {
		fmt.Fprintf(&in, "{\"id\":\"m%02d\",\"text\":%q}\n", i, fmt.Sprintf("Order %d: %d units of part %x shipped to warehouse %d on day %d. ", i, i*7, i*7919, i%5, i%31)+footer)
	}
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, in.String()); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLine([]string{"query", "--db", idx, "--id", "m07", "--threshold", "0.95"}, "")
	m := regexp.MustCompile(`0 matches at Jaccard >= 0.95 among (\d+) candidates`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("a query of a document sharing its footer with 59 others: exit %d\n%s\n%s", code, out, errOut)
	}
	if n, _ := strconv.Atoi(m[1]); n < hotQueryCandidates || !strings.Contains(errOut, m[1]+" candidates were read for 0 matches") || !strings.Contains(errOut, "lshdb buckets --db") {
		t.Errorf("%s candidates: the note %q", m[1], errOut)
	}
	defer func(n int64) { hotPairsVerified = n }(hotPairsVerified)
	hotPairsVerified = 100
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--stats"}, ""); code != 0 || !regexp.MustCompile(`\d+ candidate pairs were verified for 0 matched`).MatchString(errOut) {
		t.Errorf("pairs of documents sharing a footer: exit %d %s", code, errOut)
	}
	var distinct strings.Builder
	for i := range 60 {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		var w []string
		for range 12 {
			w = append(w, fmt.Sprintf("%x", rng.Uint32()))
		}
		fmt.Fprintf(&distinct, "{\"id\":\"d%02d\",\"text\":%q}\n", i, strings.Join(w, " "))
	}
	idx2 := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx2, "-"}, distinct.String()); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"query", "--db", idx2, "--id", "d07"}, ""); code != 0 || strings.Contains(errOut, "candidates were read") {
		t.Errorf("a query of distinct texts: exit %d %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"pairs", "--db", idx2}, ""); code != 0 || strings.Contains(errOut, "were verified") {
		t.Errorf("pairs of distinct texts: exit %d %s", code, errOut)
	}
}

// Ensure that pairs says, before its first pair, how many pairs groups of
// identical documents make when they are many (here with the bound made
// small), and says nothing below the bound or with --limit: 100,000
// copies of one text were 5 billion lines with no word first (a review
// of skewed corpora, K3). The oracle groups the fixture's texts by their
// shingle sets.
func TestPairsNotesIdenticalGroupsFirst(t *testing.T) {
	dir := tieFixture(t)
	sh, err := minhash.NewShingler(minhash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs, _, code := runLine([]string{"export", "--db", dir, "--all"}, "")
	if code != 0 {
		t.Fatal("export failed")
	}
	bySet := map[string]int{}
	for line := range strings.Lines(docs) {
		var d struct{ Text string }
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		bySet[fmt.Sprint(sh.AppendSet(nil, d.Text))]++
	}
	groups, pairs, largest := 0, int64(0), 0
	for _, m := range bySet {
		if m > 1 {
			groups++
			pairs += int64(m) * int64(m-1) / 2
			largest = max(largest, m)
		}
	}
	if groups == 0 {
		t.Fatal("the fixture has no identical documents")
	}
	defer func(n int64) { identicalPairsNote = n }(identicalPairsNote)
	note := fmt.Sprintf("lshdb: note: %d groups of documents with identical shingle sets (the largest of %d) make %d pairs at Jaccard 1", groups, largest, pairs)
	for _, c := range []struct {
		bound int64
		args  []string
		noted bool
	}{
		{pairs, []string{"--sort=false"}, true},
		{pairs, nil, true},
		{pairs + 1, []string{"--sort=false"}, false},
		{1, []string{"--limit", "3"}, false},
	} {
		identicalPairsNote = c.bound
		var both lockedBuffer
		args := append([]string{"pairs", "--db", dir, "--output", "json"}, c.args...)
		if code := run(context.Background(), args, strings.NewReader(""), &both, &both); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, both.String())
		}
		out := both.String()
		at, first := strings.Index(out, note), strings.Index(out, `{"a":`)
		if first < 0 {
			t.Fatalf("%v: no pair in %q", args, out)
		}
		if c.noted && (at < 0 || at > first) {
			t.Errorf("%v (bound %d): want %q before the first pair, got\n%s", args, c.bound, note, out)
		}
		if !c.noted && strings.Contains(out, "identical shingle sets") {
			t.Errorf("%v (bound %d): a note of identical documents:\n%s", args, c.bound, out)
		}
	}
}

// endlessX is an input of 'x' with no line end, which counts what was
// read from it and ends after 64 MiB, so that a reader that reads on to
// the line's end fails a test (having held 64 MiB) rather than hanging
// it, or growing until the system kills it (a read-through's R8).
type endlessX struct {
	n atomic.Int64 // NB: a reader may read on another goroutine
}

func (e *endlessX) Read(p []byte) (int, error) {
	if e.n.Load() >= 64<<20 {
		return 0, io.EOF
	}
	for i := range p {
		p[i] = 'x'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// Ensure that a pairs file with no line end is refused once a line passes
// the longest a pairs file holds, having read little of it: clusters
// --from /dev/zero held the whole line, and grew to 15 GB (a bad-input
// review, B2). Oracle: the bytes taken from an endless input.
func TestPairsFileEndlessLine(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	for _, args := range [][]string{
		{"clusters", "--db", idx, "--from", "-"},
		{"export", "--db", idx, "--from", "-"},
	} {
		in := &endlessX{}
		_, errOut, code := runCtx(context.Background(), args, in)
		if code != 1 || !strings.Contains(errOut, "a line longer than") {
			t.Errorf("lshdb %s: exit %d, want 1 naming the line:\n%s", strings.Join(args, " "), code, errOut)
		}
		if n := in.n.Load(); n > 8<<20 {
			t.Errorf("lshdb %s: read %d bytes of a line with no end", strings.Join(args, " "), n)
		}
	}
}

// Ensure that clusters --from takes a pairs stream saved from the API
// (GET /v1/pairs: an end line, no header line), which it refused, and
// gives the clusters of the index's own pairs (the oracle: clusters
// without --from); and that such a file with a pair line cut is refused
// by its end line's count (a review of the API from a client's side,
// AC14).
func TestClustersFromTheAPIsPairs(t *testing.T) {
	dir := tieFixture(t)
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	httpapi.Handler(d, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/pairs", nil))
	d.Close()
	stream := rec.Body.String()
	lines := strings.Split(strings.TrimSuffix(stream, "\n"), "\n")
	if rec.Code != 200 || len(lines) < 3 || !strings.HasPrefix(lines[len(lines)-1], `{"end":`) {
		t.Fatalf("GET /v1/pairs: %d %s", rec.Code, stream)
	}
	want, errOut, code := runLine([]string{"clusters", "--db", dir, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("clusters: %d %s", code, errOut)
	}
	got, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", "-", "--output", "json"}, stream)
	if code != 0 || got != want {
		t.Errorf("clusters --from the API's pairs: exit %d %s\n%s\nwant\n%s", code, errOut, got, want)
	}
	cut := strings.Join(lines[1:], "\n") + "\n"
	if _, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", "-", "--output", "json"}, cut); code == 0 || !strings.Contains(errOut, "its end line says") {
		t.Errorf("clusters --from the API's pairs with a line cut: exit %d %s", code, errOut)
	}
	// A file of pairs --header that lost its header line is still
	// refused: its threshold and index are not known (R1).
	full, errOut, code := runLine([]string{"pairs", "--db", dir, "--output", "json", "--header", "--threshold", "0.9"}, "")
	if code != 0 {
		t.Fatalf("pairs --header: %d %s", code, errOut)
	}
	headless := full[strings.IndexByte(full, '\n')+1:]
	if _, errOut, code := runLine([]string{"clusters", "--db", dir, "--from", "-", "--threshold", "0.5"}, headless); code == 0 || !strings.Contains(errOut, "no header line") {
		t.Errorf("clusters --from a pairs --header file without its header: exit %d %s", code, errOut)
	}
}

// Ensure that clusters' summary on a storage-none index says its
// similarities are estimates (a statistician's review, Q5: it said
// Jaccard), and on a text index Jaccard.
func TestClustersNoteOfEstimates(t *testing.T) {
	for _, storage := range []string{"none", "text"} {
		dir := filepath.Join(t.TempDir(), "index")
		if _, errOut, code := runLine([]string{"create", "--db", dir, "--storage", storage}, ""); code != 0 {
			t.Fatalf("create: %d %s", code, errOut)
		}
		tieFixtureIn(t, dir)
		_, errOut, code := runLine([]string{"clusters", "--db", dir}, "")
		want := "clusters at Jaccard >= 0.8"
		if storage == "none" {
			want = "clusters at estimated Jaccard (not verified) >= 0.8"
		}
		if code != 0 || !strings.Contains(errOut, want) {
			t.Errorf("clusters of a %s index: exit %d %s; want %q", storage, code, errOut, want)
		}
	}
}

// Ensure that an interrupted command whose standard output is a file or
// a pipe says that what it holds is a part (a review at scale, S10-4:
// pairs > p.jsonl stopped by Ctrl-C said only "interrupted after 650858
// pairs", and the file of whole lines read as complete). The oracles:
// the lines and bytes the output holds, counted by the test.
func TestInterruptedOutputSaysPartial(t *testing.T) {
	// NB: 2,000 copies of one text are 1,999,000 pairs, tens of MB: the
	// interrupt comes long before their end. The 1,038 pairs of
	// genPairsFixture (60 KiB) were all written before it on a loaded CI
	// machine, and the run ended with exit 0.
	const copies, all = 2000, 2000 * 1999 / 2
	idx := filepath.Join(t.TempDir(), "idx")
	var in strings.Builder
	for i := range copies {
		fmt.Fprintf(&in, "{\"id\":\"c%04d\",\"text\":\"one text copied again and again for the pairs of its copies\"}\n", i)
	}
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "--progress", "none", "-"}, in.String()); code != 0 {
		t.Fatal(errOut)
	}
	args := []string{"pairs", "--db", idx, "--sort=false", "--output", "json", "--progress", "none"}
	for _, kind := range []string{"file", "pipe"} {
		ctx, cancel := context.WithCancel(context.Background())
		var out *os.File
		var got func() []byte
		switch kind {
		case "file":
			f, err := os.Create(filepath.Join(t.TempDir(), "p.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			out = f
			go func() {
				// NB: the interrupt comes once the first lines are in it.
				for fi, err := f.Stat(); err == nil && fi.Size() == 0; fi, err = f.Stat() {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			got = func() []byte { b, _ := os.ReadFile(f.Name()); return b }
		case "pipe":
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			out = pw
			read := make(chan []byte, 1)
			go func() {
				var b bytes.Buffer
				first := make([]byte, 1)
				if n, _ := pr.Read(first); n > 0 {
					b.Write(first[:n])
					cancel()
				}
				io.Copy(&b, pr)
				read <- b.Bytes()
			}()
			got = func() []byte { pw.Close(); return <-read }
		}
		var errOut bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), out, &errOut)
		b := got()
		cancel()
		lines := bytes.Count(b, []byte("\n"))
		want := fmt.Sprintf("lshdb: interrupted after %d pairs (standard output, a %s, holds the %s written before it: a part that may read as whole; --out FILE leaves no part behind)\n", lines, kind, humanBytes(uint64(len(b))))
		if code != 130 || lines == 0 || lines >= all || errOut.String() != want {
			t.Errorf("%s: exit %d, %d lines, stderr %q, want %q", kind, code, lines, errOut.String(), want)
		}
	}
	// Not of a command whose output is a summary, each line whole
	// (dedup, which has no --out: a read-through).
	var docs strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&docs, "{\"id\":\"n%d\",\"text\":\"a document of its own, number %d, with a few more words\"}\n", i, i)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		first := make([]byte, 1)
		if n, _ := pr.Read(first); n > 0 {
			cancel()
		}
		io.Copy(io.Discard, pr)
	}()
	var errOut bytes.Buffer
	code := run(ctx, []string{"dedup", "--db", filepath.Join(t.TempDir(), "d"), "--output", "json", "--progress", "none", "-"}, strings.NewReader(docs.String()), pw, &errOut)
	pw.Close()
	if code != 130 || strings.Contains(errOut.String(), "standard output") {
		t.Errorf("dedup interrupted: exit %d, stderr %q, want 130 and no word of a part", code, errOut.String())
	}
}

// Ensure that a pairs file whose header counts the index's documents but
// not its writes (an earlier lshdb's: "docs" without "written") is taken
// with a note that it cannot be checked, also when the index holds as
// many documents as it did: a document replaced since kept its old pairs,
// and export --from removed its new, unrelated text as a duplicate
// without a word (an upgrade review's UPG-1). The oracle: the file of
// the current build, refused as stale after the same write.
func TestPairsFileOfAnEarlierBuild(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	in := `{"id":"a","text":"the quick brown fox jumps over the lazy dog near the river bank"}` + "\n" +
		`{"id":"b","text":"the quick brown fox jumps over the lazy dog near the river bank!"}` + "\n" +
		`{"id":"c","text":"an unrelated document about pebbles and sand dunes in the desert"}` + "\n"
	if _, errOut, code := runLine([]string{"build", "--db", idx}, in); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errOut)
	}
	current, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--header"}, "")
	if code != 0 || !strings.Contains(current, `"written":3`) {
		t.Fatalf("pairs: exit %d: %s\n%s", code, errOut, current)
	}
	earlier := regexp.MustCompile(`"written":\d+,?`).ReplaceAllString(current, "")
	if earlier == current || !strings.Contains(earlier, `"docs":3`) {
		t.Fatalf("the earlier build's header: %s", earlier)
	}
	// b replaced by an unrelated text: as many documents as before.
	if _, errOut, code := runLine([]string{"insert", "--db", idx}, `{"id":"b","text":"completely other words on tides and harbours and the ships at anchor there"}`+"\n"); code != 0 {
		t.Fatalf("insert: exit %d: %s", code, errOut)
	}
	kept := filepath.Join(t.TempDir(), "kept.jsonl")
	if _, errOut, code := runLine([]string{"export", "--db", idx, "--from", "-", "--out", kept}, current); code == 0 || !strings.Contains(errOut, "stale pairs file") {
		t.Fatalf("export --from the current build's file after a write: exit %d: %s; want it refused", code, errOut)
	}
	_, errOut, code = runLine([]string{"export", "--db", idx, "--from", "-", "--out", kept}, earlier)
	if code != 0 || !strings.Contains(errOut, "but not its writes (an earlier lshdb's, or one written by hand): it cannot be checked that the index was not written since") {
		t.Fatalf("export --from the earlier build's file: exit %d: %q; want a note that it cannot be checked", code, errOut)
	}
	// One document more: said as before.
	if _, errOut, code := runLine([]string{"insert", "--db", idx}, `{"id":"d","text":"a fourth document on mountains and rivers"}`+"\n"); code != 0 {
		t.Fatalf("insert: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runLine([]string{"export", "--db", idx, "--from", "-", "--out", kept}, earlier); code != 0 || !strings.Contains(errOut, "it holds 4 now") {
		t.Fatalf("export --from the earlier build's file, a document more: exit %d: %q", code, errOut)
	}
}
