package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/minhash"
	"github.com/parquet-go/parquet-go"
)

// genLine is one line of lshdb gen's output: a copy names its original
// and the word-edit rate that made it (the ground truth).
type genLine struct {
	ID       string  `json:"id"`
	Text     string  `json:"text"`
	Of       string  `json:"of"`
	EditRate float64 `json:"edit_rate"`
}

// decompressedFile returns a file's content, decompressed as its name
// says (.gz: gzip, .zst: zstd), by the standard readers.
func decompressedFile(t *testing.T, path string) []byte {
	t.Helper()
	switch {
	case strings.HasSuffix(path, ".gz"):
		return gunzipFile(t, path)
	case strings.HasSuffix(path, ".zst"):
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zstd.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s is not zstd: %v", path, err)
		}
		return b
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gunzipFile returns a gzip file's content.
func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitLines splits b after each "\n" (a line keeps its end).
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// mustRun runs the command in-process and fails the test on a non-zero
// exit.
func mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errOut, code := runLine(args, "")
	if code != 0 {
		t.Fatalf("lshdb %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out, errOut
}

// Ensure that filter in centers mode, on a generated corpus with known
// copies, keeps exactly one document of each group of copies made at a
// word-edit rate of at most 0.03 (the ground truth of lshdb gen, not
// lshdb's pairs), that no two kept documents reach the threshold (an exact
// all-pairs join over the kept documents' shingle sets), that every removed record
// names a kept document at or above the threshold with its exact Jaccard,
// and that the kept and removed records are the input's lines, each
// exactly once, byte for byte, in the input's order.
func TestFilterKeepsOnePerGroupOfCopies(t *testing.T) {
	dir := t.TempDir()
	in, idx := filepath.Join(dir, "g.jsonl.gz"), filepath.Join(dir, "idx")
	n := 3000
	if testing.Short() {
		n = 1200 // NB: CI's race step
	}
	mustRun(t, "gen", "--n", fmt.Sprint(n), "--seed", "11", "--out", in)
	const th = 0.5
	mustRun(t, "build", "--db", idx, "--threshold", fmt.Sprint(th), in)
	kept, removed := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "removed.jsonl")
	_, summary := mustRun(t, "filter", "--db", idx, "--mode", "centers", "--out", kept, "--removed", removed, in)

	input := splitLines(gunzipFile(t, in))
	keptB, _ := os.ReadFile(kept)
	removedB, _ := os.ReadFile(removed)
	keptL, removedL := splitLines(keptB), splitLines(removedB)
	docs := map[string]genLine{}
	var order []string
	for _, l := range input {
		var g genLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		docs[g.ID] = g
		order = append(order, g.ID)
	}
	// The kept lines are input lines, in the input's order; the removed
	// ones are input lines with two members added; together, the input.
	var rebuilt []string
	keptIDs := map[string]bool{}
	for _, l := range keptL {
		var g genLine
		json.Unmarshal([]byte(l), &g)
		keptIDs[g.ID] = true
		rebuilt = append(rebuilt, l)
	}
	wantKept := []string{}
	for i, id := range order {
		if keptIDs[id] {
			wantKept = append(wantKept, input[i])
		}
	}
	if !slices.Equal(keptL, wantKept) {
		t.Fatalf("the kept lines are not the input's lines of the kept ids, in order")
	}
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	set := func(id string) []uint64 {
		s, _ := h.Document(nil, nil, docs[id].Text)
		return s
	}
	for _, l := range removedL {
		var r struct {
			ID          string   `json:"id"`
			DuplicateOf string   `json:"duplicate_of"`
			Similarity  *float64 `json:"similarity"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Similarity == nil {
			t.Fatalf("removed line %q: %v", l, err)
		}
		if !keptIDs[r.DuplicateOf] {
			t.Errorf("%s: duplicate_of %s is not kept", r.ID, r.DuplicateOf)
		}
		if exact := minhash.Jaccard(set(r.ID), set(r.DuplicateOf)); exact != *r.Similarity || exact < th {
			t.Errorf("%s ~ %s: similarity %v, exact %v, threshold %v", r.ID, r.DuplicateOf, *r.Similarity, exact, th)
		}
		sim := strconv.FormatFloat(*r.Similarity, 'f', -1, 64)
		if *r.Similarity == 1 {
			sim = "1.0" // NB: never read as an integer (S10-5)
		}
		suffix := fmt.Sprintf(`,"duplicate_of":%q,"similarity":%s}`+"\n", r.DuplicateOf, sim)
		if !strings.HasSuffix(l, suffix) {
			t.Fatalf("removed line %q does not end with %q", l, suffix)
		}
		rebuilt = append(rebuilt, strings.TrimSuffix(l, suffix)+"}\n")
	}
	slices.Sort(rebuilt)
	sorted := slices.Clone(input)
	slices.Sort(sorted)
	if !slices.Equal(rebuilt, sorted) {
		t.Fatalf("kept ∪ removed (%d + %d lines) is not the input (%d lines)", len(keptL), len(removedL), len(input))
	}
	// Exactly one kept of every group of copies at edit rate ≤ 0.03.
	groups := map[string][]string{}
	for _, id := range order {
		if g := docs[id]; g.Of != "" && g.EditRate <= 0.03 {
			groups[g.Of] = append(groups[g.Of], id)
		}
	}
	for orig, copies := range groups {
		n := 0
		for _, id := range append([]string{orig}, copies...) {
			if keptIDs[id] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("group of %s (%d copies): %d kept", orig, len(copies), n)
		}
	}
	// No kept pair at or above the threshold: the exact all-pairs join
	// (internal/allpairs, checked against brute force by its own tests).
	var sets [][]uint64
	var ids []string
	for id := range keptIDs {
		ids = append(ids, id)
		sets = append(sets, set(id))
	}
	if ps := allpairs.Join(sets, th); len(ps) > 0 {
		p := ps[0]
		t.Errorf("%d kept pairs at Jaccard >= %v, e.g. %s ~ %s (%v)", len(ps), th, ids[p.A], ids[p.B], minhash.Jaccard(sets[p.A], sets[p.B]))
	}
	if len(groups) < n/30 || len(removedL) < n/30 {
		t.Fatalf("only %d groups, %d removed: the corpus does not test much", len(groups), len(removedL))
	}
	want := fmt.Sprintf("%d kept, %d removed in ", len(keptL), len(removedL))
	if !strings.HasPrefix(summary, want) {
		t.Errorf("summary %q, want it to start %q", summary, want)
	}

	// export writes the same decision from the stored texts: the kept
	// documents (id and text as in the input) in insertion order, the
	// removed ones with the same duplicate_of and similarity as filter's.
	exported, _ := mustRun(t, "export", "--db", idx, "--removed", filepath.Join(dir, "xr.jsonl.gz"))
	var exportedIDs []string
	for _, l := range splitLines([]byte(exported)) {
		var g genLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		if g.Text != docs[g.ID].Text {
			t.Fatalf("export of %s: text %q, the input's %q", g.ID, g.Text, docs[g.ID].Text)
		}
		exportedIDs = append(exportedIDs, g.ID)
	}
	var keptOrder []string
	for _, id := range order {
		if keptIDs[id] {
			keptOrder = append(keptOrder, id)
		}
	}
	if !slices.Equal(exportedIDs, keptOrder) {
		t.Fatalf("export kept %d documents, filter %d (or in another order)", len(exportedIDs), len(keptOrder))
	}
	xr := splitLines(gunzipFile(t, filepath.Join(dir, "xr.jsonl.gz")))
	if len(xr) != len(removedL) {
		t.Fatalf("export removed %d, filter %d", len(xr), len(removedL))
	}
	for i, l := range xr {
		var x, f struct {
			ID          string  `json:"id"`
			DuplicateOf string  `json:"duplicate_of"`
			Similarity  float64 `json:"similarity"`
		}
		json.Unmarshal([]byte(l), &x)
		json.Unmarshal([]byte(removedL[i]), &f)
		if x != f {
			t.Fatalf("removed %d: export %+v, filter %+v", i, x, f)
		}
	}
}

// Ensure that filter writes CSV back byte for byte: the header once, CRLF
// line ends, a quoted field over lines and an extra column as they were,
// the input's last line without its end; --annotate adds its columns to
// the header and to every row; a gzip input gives a gzip stdout.
func TestFilterCSVBytes(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	rows := []string{
		"id,text,note\r\n",
		"a,\"" + text + "\",first\r\n",
		"b,\"" + text + " today\",\"two\r\nlines\"\r\n",
		"c,something else entirely with no relation to foxes or dogs at all,\"q \"\"x\"\"\"\r\n",
		"d,\"" + text + "\",last",
	}
	in := filepath.Join(dir, "docs.csv")
	os.WriteFile(in, []byte(strings.Join(rows, "")), 0o644)
	mustRun(t, "build", "--db", idx, "--threshold", "0.7", in)
	out, _ := mustRun(t, "filter", "--db", idx, in)
	if want := rows[0] + rows[1] + rows[3]; out != want {
		t.Fatalf("filter wrote\n%q\nwant\n%q", out, want)
	}
	removed := filepath.Join(dir, "removed.csv")
	mustRun(t, "filter", "--db", idx, "--out", filepath.Join(dir, "kept.csv"), "--removed", removed, in)
	got, _ := os.ReadFile(removed)
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	sa, _ := h.Document(nil, nil, text)
	sb, _ := h.Document(nil, nil, text+" today")
	want := "id,text,note,duplicate_of,similarity\r\n" +
		strings.TrimSuffix(rows[2], "\r\n") + fmt.Sprintf(",a,%v\r\n", minhash.Jaccard(sa, sb)) +
		rows[4] + ",a,1.0\r\n"
	if string(got) != want {
		t.Fatalf("--removed wrote\n%q\nwant\n%q", got, want)
	}
	ann, _ := mustRun(t, "filter", "--db", idx, "--annotate", in)
	wantAnn := "id,text,note,cluster_id,cluster_size,duplicate_of,similarity\r\n" +
		strings.TrimSuffix(rows[1], "\r\n") + ",1,3,,1.0\r\n" +
		strings.TrimSuffix(rows[2], "\r\n") + fmt.Sprintf(",1,3,a,%v\r\n", minhash.Jaccard(sa, sb)) +
		strings.TrimSuffix(rows[3], "\r\n") + ",,1,,\r\n" +
		rows[4] + ",1,3,a,1.0\r\n"
	if ann != wantAnn {
		t.Fatalf("--annotate wrote\n%q\nwant\n%q", ann, wantAnn)
	}
	// A gzip input: stdout (not a terminal) is gzip too.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(rows, "")))
	zw.Close()
	gzIn := filepath.Join(dir, "docs.csv.gz")
	os.WriteFile(gzIn, gz.Bytes(), 0o644)
	zout, _ := mustRun(t, "filter", "--db", idx, gzIn)
	zr, err := gzip.NewReader(strings.NewReader(zout))
	if err != nil {
		t.Fatalf("stdout of a gzip input is not gzip: %v", err)
	}
	if b, _ := io.ReadAll(zr); string(b) != rows[0]+rows[1]+rows[3] {
		t.Fatalf("gzip stdout holds %q", b)
	}
}

// Ensure that filter refuses what it cannot write back, with an error
// naming the problem, and leaves no output file behind: inputs of
// different formats or headers, a text file, a record that already has a
// field filter adds, stdin; and that a record the index refused (a bad
// line) is kept as read.
func TestFilterErrors(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	j := filepath.Join(dir, "a.jsonl")
	os.WriteFile(j, []byte(fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n{\"id\":\"b\",\"text\":%q,\"duplicate_of\":\"x\"}\nnot json\n", text, text)), 0o644)
	c1, c2 := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	os.WriteFile(c1, []byte("id,text\nc,"+text+"\n"), 0o644)
	os.WriteFile(c2, []byte("text,id\n"+text+",d\n"), 0o644)
	txt := filepath.Join(dir, "t.txt")
	os.WriteFile(txt, []byte(text), 0o644)
	// An empty or blank input, and one cut short in its last line, wrote
	// an empty output, or one whose last line was no JSON, with exit 0
	// (a data engineer's review, NV4).
	empty, blank, cut := filepath.Join(dir, "empty.jsonl"), filepath.Join(dir, "blank.jsonl"), filepath.Join(dir, "cut.jsonl")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(blank, []byte("\n\n"), 0o644)
	os.WriteFile(cut, []byte(fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n{\"id\":\"b\",\"text\":\"the quick br", text)), 0o644)
	mustRun(t, "build", "--db", idx, "--skip-bad", j)
	out := filepath.Join(dir, "out") // NB: a name that says no format: the inputs' is written
	// A pipe is read once: the records its first reading took were not
	// there for the pass that writes (<(zcat f), as here: an empty
	// output, exit 0), and a FIFO's second opening hung.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		b, _ := os.ReadFile(j)
		pw.Write(b)
		pw.Close()
	}()
	pipe := fmt.Sprintf("/dev/fd/%d", pr.Fd())
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{j, c1}, 1, "different formats (jsonl, csv)"},
		{[]string{c1, c2}, 1, "different headers"},
		{[]string{txt}, 2, "filter writes back JSON Lines, CSV, TSV and Parquet"},
		{[]string{"--removed", filepath.Join(dir, "r.jsonl"), j}, 1, `has a field "duplicate_of"`},
		{[]string{"-"}, 2, "give files, not stdin"},
		{[]string{pipe}, 2, "is not a file (a pipe): write it to a file first"},
		{[]string{"--annotate", "--removed", "x", j}, 2, "--annotate writes every record"},
		// An output whose name says another format than the input's
		// (it held the input's, silently): a usage error, as export's.
		{[]string{"--out", filepath.Join(dir, "out.csv"), j}, 2, "--out " + filepath.Join(dir, "out.csv") + " names CSV, but filter writes each input back in its own format"},
		// NB: .gzip as nameWriter writes it (it was passed over as a name
		// that says no format).
		{[]string{"--out", filepath.Join(dir, "out.csv.gzip"), j}, 2, "--out " + filepath.Join(dir, "out.csv.gzip") + " names CSV, but filter writes each input back in its own format"},
		{[]string{"--removed", filepath.Join(dir, "removed-out.tsv.gz"), c1}, 2, "names TSV"},
		{[]string{"--out", filepath.Join(dir, "out.jsonl.zst"), c1}, 2, "a.csv is CSV (name the output .csv"},
		{[]string{empty}, 1, "the inputs hold no record, and the index holds 2 documents"},
		{[]string{blank}, 1, "the inputs hold no record"},
		{[]string{"--removed", filepath.Join(dir, "r.jsonl"), cut}, 1, "the input ends in the middle of a record: " + cut + ":2"},
	} {
		args := append([]string{"filter", "--db", idx, "--out", out}, tc.args...)
		_, errOut, code := runLine(args, "")
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*out*")); len(left) > 0 {
			t.Errorf("%v: left %v behind", tc.args, left)
		}
	}
	// A last line that is a whole JSON object with no line end, which
	// the build skips as a bad record (no text), is no file cut short:
	// kept as read (a read-through's R1).
	whole := filepath.Join(dir, "whole.jsonl")
	os.WriteFile(whole, []byte(fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n{\"id\":\"z9\"}", text)), 0o644)
	if got, errOut, code := runLine([]string{"filter", "--db", idx, whole}, ""); code != 0 || !strings.HasSuffix(got, "{\"id\":\"z9\"}\n") {
		t.Errorf("filter of an input whose last line is a whole bad record: exit %d, %q, %q", code, got, errOut)
	}
	// The bad line is kept as read; b (a duplicate of a) is removed.
	got, _ := mustRun(t, "filter", "--db", idx, j)
	if want := fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\nnot json\n", text); got != want {
		t.Errorf("filter wrote %q, want %q", got, want)
	}
	// The sentinels match with errors.Is.
	s := &sink{what: "--out", cols: removedCols}
	if err := s.begin(docio.Source{Name: txt, Format: "text"}); !errors.Is(err, errFilterFormat) {
		t.Errorf("text input: %v", err)
	}
}

// Ensure that filter refuses an output that is one of its inputs (the
// output replaces its file: the input would be lost), by the same name,
// another spelling of it, a symbolic link or a hard link to it, for --out
// and --removed alike, and that the input is left as it was.
func TestFilterRefusesToOverwriteItsInput(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	in := filepath.Join(dir, "in.jsonl")
	body := fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n{\"id\":\"b\",\"text\":%q}\n", text, text)
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", "--db", idx, in)
	sym, hard := filepath.Join(dir, "sym.jsonl"), filepath.Join(dir, "hard.jsonl")
	if err := os.Symlink(in, sym); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.jsonl")
	for _, args := range [][]string{
		{"--out", in, in},
		{"--out", filepath.Join(dir, ".", "in.jsonl"), in},
		{"--out", other, "--removed", in, in},
		{"--out", sym, in},
		{"--removed", hard, "--out", other, in},
		{"--out", other, "--removed", in, sym},
	} {
		_, errOut, code := runLine(append([]string{"filter", "--db", idx}, args...), "")
		if code != 2 || !strings.Contains(errOut, "filter would replace the file it reads") {
			t.Errorf("%v: exit %d, %q; want exit 2 and a refusal", args, code, errOut)
		}
		if got, err := os.ReadFile(in); err != nil || string(got) != body {
			t.Fatalf("%v: the input is now %q (%v)", args, got, err)
		}
		if _, err := os.Stat(other); err == nil {
			t.Errorf("%v: wrote %s", args, other)
		}
	}
	// The pairs file --from reads is an input too.
	pairs := filepath.Join(dir, "pairs.jsonl")
	p, _ := mustRun(t, "pairs", "--db", idx, "--output", "json")
	if err := os.WriteFile(pairs, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--from", pairs, "--removed", pairs, "--out", other, in}, "")
	if got, _ := os.ReadFile(pairs); code != 2 || !strings.Contains(errOut, "filter would replace the file it reads") || string(got) != p {
		t.Errorf("--removed over the --from file: exit %d %q; the file is now %q", code, errOut, got)
	}
	// Another file is fine, and the input stays.
	mustRun(t, "filter", "--db", idx, "--out", other, in)
	if got, _ := os.ReadFile(other); !strings.Contains(string(got), `"id":"a"`) || strings.Contains(string(got), `"id":"b"`) {
		t.Errorf("filter wrote %q", got)
	}
}

// Ensure that filter fails, writing nothing, when not one record of its
// inputs can be read as a document (the index was built with other id or
// text flags), instead of keeping every record as read and exiting 0; and
// that with the build's flags the same input filters.
func TestFilterWithTheWrongFlags(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	in := filepath.Join(dir, "in.jsonl")
	body := fmt.Sprintf("{\"body\":%q}\n{\"body\":%q}\n{\"body\":\"something else entirely, not like the others at all\"}\n", text, text)
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", "--db", idx, "--id-from", "line", "--text-field", "body", in)
	out := filepath.Join(dir, "out.jsonl")
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--out", out, in}, "")
	if code != 1 || !strings.Contains(errOut, "no record of the inputs could be read as a document") || !strings.Contains(errOut, "--id-from") {
		t.Errorf("filter without the build's flags: exit %d %q", code, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*out.jsonl*")); len(left) > 0 {
		t.Errorf("a failed filter left %v", left)
	}
	mustRun(t, "filter", "--db", idx, "--id-from", "line", "--text-field", "body", "--out", out, in)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(body, "\n"); string(got) != lines[0]+"\n"+lines[2]+"\n" {
		t.Errorf("filter with the build's flags wrote %q", got)
	}
}

// Ensure that filter writes JSON Lines inputs back byte for byte across
// two files (CRLF line ends, a bad line kept as read, a first file whose
// last line has no end and gets the line end seen before it, so that the
// next file's first line does not join it), and that inputs filter cannot
// write back are refused before the clustering: here the clustering
// itself would fail (a pairs file naming an id the index does not hold),
// and the shape's error comes first.
func TestFilterAcrossFilesAndShapeFirst(t *testing.T) {
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	a := filepath.Join(dir, "a.jsonl")
	os.WriteFile(a, []byte(fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\r\n{\"id\":\"b\",\"text\":%q}\r\nbad line\r\n{\"id\":\"c\",\"text\":\"other words entirely, nothing alike\"}", text, text+"!")), 0o644)
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(b, []byte(fmt.Sprintf("{\"id\":\"d\",\"text\":%q,\"extra\":[1,2]}\n{\"id\":\"e\",\"text\":\"a fifth text, unlike the others\"}\n", text)), 0o644)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "--skip-bad", "--threshold", "0.7", a, b)
	out, _ := mustRun(t, "filter", "--db", idx, a, b)
	want := fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\r\nbad line\r\n{\"id\":\"c\",\"text\":\"other words entirely, nothing alike\"}\r\n{\"id\":\"e\",\"text\":\"a fifth text, unlike the others\"}\n", text)
	if out != want {
		t.Fatalf("filter wrote\n%q\nwant\n%q", out, want)
	}
	csv := filepath.Join(dir, "c.csv")
	os.WriteFile(csv, []byte("id,text\nz,"+text+"\n"), 0o644)
	pairs := filepath.Join(dir, "pairs.jsonl")
	os.WriteFile(pairs, []byte(`{"a":"a","b":"nobody","jaccard":1}`+"\n"), 0o644)
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--from", pairs, a, csv}, "")
	if code != 1 || !strings.Contains(errOut, "different formats") {
		t.Fatalf("mixed inputs with a failing clustering: exit %d %q; want the inputs' error", code, errOut)
	}
	_, errOut, code = runLine([]string{"filter", "--db", idx, "--from", pairs, a}, "")
	if code != exitNotFound || !strings.Contains(errOut, "nobody") {
		t.Fatalf("the failing clustering alone: exit %d %q", code, errOut)
	}
}

// writeParquet writes rows to a Parquet file at path, its schema their
// type's.
func writeParquet[T any](t *testing.T, path string, rows []T, opts ...parquet.WriterOption) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// parquetFileRows reads a Parquet file's schema and rows with parquet-go.
func parquetFileRows(t *testing.T, path string) (*parquet.Schema, []parquet.Row) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rd := parquet.NewReader(pf, pf.Schema())
	defer rd.Close()
	var rows []parquet.Row
	buf := make([]parquet.Row, 64)
	for {
		n, err := rd.ReadRows(buf)
		for _, r := range buf[:n] {
			rows = append(rows, r.Clone())
		}
		if err == io.EOF {
			return pf.Schema(), rows
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Ensure that filter writes a Parquet input back as Parquet: on a file
// made by another writer (Apache Arrow's Go pqarrow, testdata/parquet-arrow),
// the kept file has the input's schema exactly and its rows are the
// input's rows of the kept ids, in order, every column (lists, structs,
// nulls) unchanged; the removed file has the input's columns then
// duplicate_of and similarity; kept ∪ removed is the input.
func TestFilterParquetFromAnotherWriter(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/parquet-arrow/docs.parquet"
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "--threshold", "0.7", in)
	kept, removed := filepath.Join(dir, "kept.parquet"), filepath.Join(dir, "removed.parquet")
	mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, in)
	inSchema, inRows := parquetFileRows(t, in)
	kSchema, kRows := parquetFileRows(t, kept)
	rSchema, rRows := parquetFileRows(t, removed)
	if kSchema.String() != inSchema.String() {
		t.Fatalf("kept schema\n%s\ninput's\n%s", kSchema, inSchema)
	}
	n := len(inSchema.Columns())
	if len(rSchema.Columns()) != n+2 || rSchema.Fields()[len(inSchema.Fields())].Name() != "duplicate_of" {
		t.Fatalf("removed schema\n%s", rSchema)
	}
	if len(rRows) == 0 || len(kRows)+len(rRows) != len(inRows) {
		t.Fatalf("%d kept + %d removed rows, %d in the input", len(kRows), len(rRows), len(inRows))
	}
	idOf := func(r parquet.Row) string {
		for _, v := range r {
			if v.Column() == 0 {
				return string(v.ByteArray())
			}
		}
		return ""
	}
	removedIDs := map[string]parquet.Row{}
	for _, r := range rRows {
		var orig parquet.Row
		for _, v := range r {
			if v.Column() < n {
				orig = append(orig, v)
			}
		}
		removedIDs[idOf(r)] = orig
	}
	k := 0
	for _, r := range inRows {
		if orig, ok := removedIDs[idOf(r)]; ok {
			if !orig.Equal(r) {
				t.Fatalf("removed %s: %v, the input's %v", idOf(r), orig, r)
			}
			continue
		}
		if k >= len(kRows) || !kRows[k].Equal(r) {
			t.Fatalf("kept row %d is not the input's row of %s", k, idOf(r))
		}
		k++
	}
}

// Ensure that gen compresses as its output's name says: a .zst file holds
// zstd, a .gz file gzip, the same lines.
func TestGenCompressionByName(t *testing.T) {
	dir := t.TempDir()
	gz, zst := filepath.Join(dir, "g.jsonl.gz"), filepath.Join(dir, "g.jsonl.zst")
	mustRun(t, "gen", "--n", "300", "--seed", "4", "--out", gz)
	mustRun(t, "gen", "--n", "300", "--seed", "4", "--out", zst)
	plain := decompressedFile(t, zst)
	if want := gunzipFile(t, gz); !bytes.Equal(plain, want) || len(splitLines(plain)) != 300 {
		t.Fatalf("zstd and gzip outputs differ (%d and %d bytes)", len(plain), len(want))
	}
}

// Ensure that gen --out - writes to standard output the lines a file
// gets (it made a file named "-"), and that an output named for a
// compression lshdb does not write (.xz, .bz2, .lz4, .zip) is refused
// (exit 2) by gen, filter (--out, --removed), export and pairs
// --clusters before anything is written: it held plain JSON Lines.
func TestOutputNames(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "g.jsonl")
	src, _ := filepath.Abs("../../testdata/corpora/debian-sample/docs.jsonl")
	mustRun(t, "gen", "--n", "200", "--seed", "4", "--source", src, "--out", file)
	want, _ := os.ReadFile(file)
	wd, _ := os.Getwd()
	os.Chdir(dir)
	out, errOut, code := runLine([]string{"gen", "--n", "200", "--seed", "4", "--source", src, "--out", "-"}, "")
	os.Chdir(wd)
	if code != 0 || out != string(want) || len(splitLines(want)) != 200 {
		t.Fatalf("gen --out -: exit %d, %d bytes, want %d: %s", code, len(out), len(want), errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Fatal(`gen --out - made a file named "-"`)
	}
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, file)
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"gen", "--n", "10", "--out"}, "g.jsonl.xz"},
		{[]string{"filter", "--db", idx, file, "--out"}, "kept.jsonl.bz2"},
		{[]string{"filter", "--db", idx, file, "--out", filepath.Join(dir, "k.jsonl"), "--removed"}, "removed.zip"},
		{[]string{"export", "--db", idx, "--out"}, "e.jsonl.lz4"},
		{[]string{"pairs", "--db", idx, "--clusters"}, "c.jsonl.XZ"},
	} {
		path := filepath.Join(dir, c.name)
		out, errOut, code := runLine(append(c.args, path), "")
		if _, err := os.Stat(path); code != 2 || out != "" || !strings.Contains(errOut, "lshdb does not write") || err == nil {
			t.Errorf("%q: exit %d, stdout %q, stderr %q, file written: %v", c.args, code, out, errOut, err == nil)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "k.jsonl")); err == nil {
		t.Error("filter wrote --out when --removed was refused")
	}
	// A picture or page named for another format (tune --plot curve.png
	// wrote SVG into it, report --out r.pdf HTML: a newcomer's review).
	for _, c := range []struct {
		args []string
		name string
		want string
	}{
		{[]string{"tune", "--plot"}, "curve.png", "--plot " + filepath.Join(dir, "curve.png") + " names PNG, but tune draws an SVG picture (name it .svg)"},
		{[]string{"report", "--db", idx, "--out"}, "r.pdf", "--out " + filepath.Join(dir, "r.pdf") + " names PDF, but report writes an HTML page (name it .html)"},
	} {
		path := filepath.Join(dir, c.name)
		_, errOut, code := runLine(append(c.args, path), "")
		if _, err := os.Stat(path); code != 2 || errOut != "lshdb: "+c.want+"\n" || err == nil {
			t.Errorf("%q: exit %d, stderr %q, file written: %v", c.args, code, errOut, err == nil)
		}
	}
	// export's refusal of another format's name is export's: it named
	// filter, and "the index is JSON Lines" (a newcomer's review).
	for _, name := range []string{"e.csv", "e.parquet", "e.tsv.gz"} {
		path := filepath.Join(dir, name)
		_, errOut, code := runLine([]string{"export", "--db", idx, "--out", path}, "")
		if _, err := os.Stat(path); code != 2 || !strings.Contains(errOut, "lshdb: export writes JSON Lines") || strings.Contains(errOut, "filter") || err == nil {
			t.Errorf("export --out %s: exit %d, stderr %q, file written: %v", name, code, errOut, err == nil)
		}
	}
}

// bgzfMembers walks a BGZF file by the sizes its members' headers give
// (the SAM/BAM specification's layout: a fixed header with FEXTRA, XLEN
// 6, subfield "BC" of 2 bytes holding the member's size less one) and
// returns how many there are, failing the test where the layout breaks.
func bgzfMembers(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		if len(b) < 18 || b[0] != 0x1f || b[1] != 0x8b || b[3]&4 == 0 || b[12] != 'B' || b[13] != 'C' {
			t.Fatalf("member %d is not a BGZF member", n)
		}
		size := int(b[16]) | int(b[17])<<8 + 1
		if size > len(b) {
			t.Fatalf("member %d says %d bytes, %d left", n, size, len(b))
		}
		b = b[size:]
		n++
	}
	return n
}

// Ensure that lshdb's gzip outputs (gen's, filter's) are BGZF, which any
// gzip reader reads as one stream (compress/gzip here) and lshdb reads on
// every core, and that a BGZF input filters as its plain text does.
func TestGzipOutputsAreBGZF(t *testing.T) {
	dir := t.TempDir()
	gz, plain, idx := filepath.Join(dir, "g.jsonl.gz"), filepath.Join(dir, "g.jsonl"), filepath.Join(dir, "idx")
	mustRun(t, "gen", "--n", "1500", "--seed", "5", "--out", gz)
	raw, _ := os.ReadFile(gz)
	text := gunzipFile(t, gz)
	if m := bgzfMembers(t, raw); m < 10 {
		t.Fatalf("gen wrote %d members for %d bytes", m, len(text))
	}
	if err := os.WriteFile(plain, text, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", "--db", idx, "--threshold", "0.5", gz)
	k1, k2 := filepath.Join(dir, "k1.jsonl"), filepath.Join(dir, "k2.jsonl.gz")
	mustRun(t, "filter", "--db", idx, "--out", k1, plain)
	mustRun(t, "filter", "--db", idx, "--out", k2, gz)
	want, _ := os.ReadFile(k1)
	raw, _ = os.ReadFile(k2)
	bgzfMembers(t, raw)
	if got := gunzipFile(t, k2); !bytes.Equal(got, want) || len(want) == 0 || len(want) == len(text) {
		t.Fatalf("filter of the BGZF input wrote %d bytes (gunzipped), of the plain one %d (of %d)", len(got), len(want), len(text))
	}
	// bgzip's own suffix says gzip too.
	k3 := filepath.Join(dir, "k3.jsonl.bgz")
	mustRun(t, "filter", "--db", idx, "--out", k3, plain)
	raw, _ = os.ReadFile(k3)
	bgzfMembers(t, raw)
	if got := gunzipFile(t, k3); !bytes.Equal(got, want) {
		t.Fatalf("the .bgz output gunzips to %d bytes, want %d", len(got), len(want))
	}
}

// Ensure that a record repeated byte for byte (the same id, the same
// bytes: an input that holds a record twice) is kept once and removed as
// a duplicate of its first copy, similarity 1, in JSON Lines and CSV;
// that a repeated id with other content still shares its id's fate (both
// kept: the index knows one document of it); that --annotate still keeps
// every record; and that kept + removed is the input, record for record.
// Before, every copy of a kept record was kept.
func TestFilterRemovesExactRepeats(t *testing.T) {
	t1 := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	t2 := "an entirely different text about the weather in the mountains this week"
	t3 := "a third text, about none of the above, with its own words and letters"
	for _, format := range []string{"jsonl", "csv"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			idx := filepath.Join(dir, "idx")
			rec := func(id, text string) string {
				if format == "csv" {
					return fmt.Sprintf("%s,\"%s\"\n", id, text)
				}
				return fmt.Sprintf("{\"id\":%q,\"text\":%q}\n", id, text)
			}
			header := ""
			if format == "csv" {
				header = "id,text\n"
			}
			lines := []string{rec("a", t1), rec("b", t2), rec("a", t1), rec("c", t3), rec("b", t2+" and again"), rec("a", t1)}
			in := filepath.Join(dir, "docs."+format)
			os.WriteFile(in, []byte(header+strings.Join(lines, "")), 0o644)
			mustRun(t, "build", "--db", idx, in)
			kept, removed := filepath.Join(dir, "kept."+format), filepath.Join(dir, "removed."+format)
			_, errOut := mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, in)
			gotKept, _ := os.ReadFile(kept)
			if want := header + lines[0] + lines[1] + lines[3] + lines[4]; string(gotKept) != want {
				t.Fatalf("kept\n%s\nwant\n%s", gotKept, want)
			}
			gotRemoved, _ := os.ReadFile(removed)
			var want string
			if format == "csv" {
				want = "id,text,duplicate_of,similarity\n" + strings.TrimSuffix(lines[2], "\n") + ",a,1.0\n" + strings.TrimSuffix(lines[5], "\n") + ",a,1.0\n"
			} else {
				add := func(l string) string {
					return strings.TrimSuffix(l, "}\n") + `,"duplicate_of":"a","similarity":1.0}` + "\n"
				}
				want = add(lines[2]) + add(lines[5])
			}
			if string(gotRemoved) != want {
				t.Fatalf("removed\n%s\nwant\n%s", gotRemoved, want)
			}
			for _, note := range []string{"4 kept, 2 removed", "2 records were copies, byte for byte", "1 record repeats an id read before with other content"} {
				if !strings.Contains(errOut, note) {
					t.Errorf("the summary lacks %q:\n%s", note, errOut)
				}
			}
			ann, annErr := mustRun(t, "filter", "--db", idx, "--annotate", in)
			if n := strings.Count(ann, "\n") - strings.Count(header, "\n"); n != len(lines) {
				t.Errorf("--annotate wrote %d records, want all %d", n, len(lines))
			}
			// NB: the copies are marked as --removed writes them, and
			// the counts are --out's (they were marked kept: 6 kept).
			rows := strings.Split(strings.TrimSuffix(ann, "\n"), "\n")
			if format == "csv" {
				rows = rows[1:] // its header, with the added columns
			}
			for i, row := range rows {
				copyRow := i == 2 || i == 5
				var marked bool
				if format == "csv" {
					marked = strings.HasSuffix(row, ",a,1.0")
				} else {
					marked = strings.Contains(row, `"duplicate_of":"a","similarity":1.0}`)
				}
				if marked != copyRow {
					t.Errorf("--annotate row %d: %s (a copy: %v)", i, row, copyRow)
				}
			}
			if !strings.Contains(annErr, "4 kept, 2 removed") {
				t.Errorf("--annotate's summary: %s", annErr)
			}
		})
	}
}

// Ensure that with ids made from the texts (--id-from hash) a record
// that repeats a text is removed as the duplicate of its first record,
// whatever its other fields: it shares the id, so it was kept with it,
// and two records of one text were both kept (a review). The oracle: the
// records written by hand.
func TestFilterRepeatedTextsWithHashIDs(t *testing.T) {
	dir := t.TempDir()
	b := "The quick brown fox jumps over the lazy dog near the riverbank every single morning"
	lines := []string{
		fmt.Sprintf(`{"src":"x","text":%q}`, b),
		fmt.Sprintf(`{"src":"y","text":%q}`, b),
		fmt.Sprintf(`{"src":"z","text":%q}`, b+" and more"),
		`{"src":"w","text":"other unrelated text about green tea and rain"}`,
	}
	in := filepath.Join(dir, "h.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "--id-from", "hash", in)
	kept, removed := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "removed.jsonl")
	_, errOut := mustRun(t, "filter", "--db", idx, "--id-from", "hash", "--out", kept, "--removed", removed, in)
	gotKept, _ := os.ReadFile(kept)
	if want := lines[0] + "\n" + lines[3] + "\n"; string(gotKept) != want {
		t.Errorf("kept\n%s\nwant\n%s(%s)", gotKept, want, errOut)
	}
	gotRemoved, _ := os.ReadFile(removed)
	var rs []struct {
		Src         string  `json:"src"`
		DuplicateOf string  `json:"duplicate_of"`
		Similarity  float64 `json:"similarity"`
	}
	for _, l := range strings.Split(strings.TrimSpace(string(gotRemoved)), "\n") {
		var r struct {
			Src         string  `json:"src"`
			DuplicateOf string  `json:"duplicate_of"`
			Similarity  float64 `json:"similarity"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(rs) != 2 || rs[0].Src != "y" || rs[0].Similarity != 1 || rs[1].Src != "z" || rs[0].DuplicateOf != rs[1].DuplicateOf || rs[0].DuplicateOf == "" {
		t.Errorf("removed: %+v; want y (similarity 1) and z, duplicates of x's id", rs)
	}
	if !strings.Contains(errOut, "2 kept, 2 removed") || !strings.Contains(errOut, "1 record was a copy, of the text (--id-from hash)") {
		t.Errorf("the summary: %s", errOut)
	}
}

// Ensure that filter removes a Parquet row that repeats an earlier row
// value for value, as it does a repeated line, and keeps a row of the
// same id and text that differs in another column (its values are not
// the same).
func TestFilterRemovesExactRepeatsParquet(t *testing.T) {
	type row struct {
		ID    string `parquet:"id"`
		Text  string `parquet:"text"`
		Extra int64  `parquet:"extra"`
	}
	t1 := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	t2 := "an entirely different text about the weather in the mountains this week"
	t3 := "a third text, about none of the above, with its own words and letters"
	rows := []row{{"a", t1, 0}, {"b", t2, 0}, {"a", t1, 0}, {"c", t3, 0}, {"b", t2 + " and again", 0}, {"a", t1, 0}, {"a", t1, 9}}
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.parquet")
	writeParquet(t, in, rows)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, in)
	kept, removed := filepath.Join(dir, "kept.parquet"), filepath.Join(dir, "removed.parquet")
	_, errOut := mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, in)
	_, inRows := parquetFileRows(t, in)
	_, kRows := parquetFileRows(t, kept)
	_, rRows := parquetFileRows(t, removed)
	wantKept := []parquet.Row{inRows[0], inRows[1], inRows[3], inRows[4], inRows[6]}
	if len(kRows) != len(wantKept) {
		t.Fatalf("%d rows kept, want %d", len(kRows), len(wantKept))
	}
	for i := range kRows {
		if !parquet.Row(kRows[i]).Equal(wantKept[i]) {
			t.Errorf("kept row %d: %v, want %v", i, kRows[i], wantKept[i])
		}
	}
	if len(rRows) != 2 {
		t.Fatalf("%d rows removed, want the 2 exact repeats of a", len(rRows))
	}
	for i, r := range rRows {
		// NB: the input's three columns, then duplicate_of and similarity.
		orig := inRows[[]int{2, 5}[i]]
		if !parquet.Row(r[:3]).Equal(orig) || r[3].String() != "a" || r[4].Double() != 1 {
			t.Errorf("removed row %d: %v, want %v with duplicate_of a, similarity 1", i, r, orig)
		}
	}
	for _, note := range []string{"5 kept, 2 removed", "2 records were copies, value for value", "2 records repeat an id read before with other content"} {
		if !strings.Contains(errOut, note) {
			t.Errorf("the summary lacks %q:\n%s", note, errOut)
		}
	}
}

// Ensure that filter tells inputs whose ids the index does not hold from
// inputs with no duplicates: records that read as documents under ids the
// index never saw (other id flags) fail the run, writing nothing; a part
// of the inputs the index was built from (tonight's file of an index of
// every night) filters with no note; inputs of which some records were
// never indexed are filtered, with a note that counts them.
func TestFilterChecksIDsAgainstTheIndex(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	var all, part, mixed strings.Builder
	for i := range 40 {
		text := fmt.Sprintf("document number %d about topic %d, with enough words to shingle well", i/2, i/2)
		line := fmt.Sprintf("{\"id\":\"d%02d\",\"text\":%q}\n", i, text)
		all.WriteString(line)
		if i < 20 {
			part.WriteString(line)
			mixed.WriteString(line)
			mixed.WriteString(fmt.Sprintf("{\"id\":\"new%02d\",\"text\":%q}\n", i, text+" and more"))
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in := write("all.jsonl", all.String())
	mustRun(t, "build", "--db", idx, in)
	out := filepath.Join(dir, "out.jsonl")
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--id-from", "line", "--out", out, in}, "")
	if code != 1 || !strings.Contains(errOut, "none of the inputs' ids is in the index") || !strings.Contains(errOut, "none of the first 40 ids read") {
		t.Errorf("filter with ids the index never saw: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed filter wrote its output: %v", err)
	}
	// NB: to stdout too: the check comes before any record is written.
	if stdout, _, code := runLine([]string{"filter", "--db", idx, "--id-from", "line", in}, ""); code != 1 || stdout != "" {
		t.Errorf("filter to stdout with ids the index never saw: exit %d, wrote %d bytes", code, len(stdout))
	}
	_, errOut = mustRun(t, "filter", "--db", idx, "--out", out, write("part.jsonl", part.String()))
	if got, _ := os.ReadFile(out); strings.Count(string(got), "\n") != 10 || strings.Contains(errOut, "note:") {
		t.Errorf("filter of a part of the inputs: %d records kept (want 10), stderr %q", strings.Count(string(got), "\n"), errOut)
	}
	_, errOut = mustRun(t, "filter", "--db", idx, "--out", out, write("mixed.jsonl", mixed.String()))
	if got, _ := os.ReadFile(out); strings.Count(string(got), "\n") != 30 || !strings.Contains(errOut, `20 records have an id the index does not hold (the first: "new00")`) {
		t.Errorf("filter of inputs half indexed: %d records kept (want 30), stderr %q", strings.Count(string(got), "\n"), errOut)
	}
	// Every record in no cluster is asked for, not the first 1,000 ids
	// alone: 1,050 records the index holds, then 30 it never saw, each a
	// copy of one of them, were all kept without a word (a data
	// engineer's review, NV1). The oracle: the records written here.
	var late strings.Builder
	for i := range 1050 {
		late.WriteString(fmt.Sprintf("{\"id\":\"old%04d\",\"text\":\"document %d of a long night, %d words of its own %d\"}\n", i, i, i*7, i*13))
	}
	lidx := filepath.Join(dir, "lidx")
	mustRun(t, "build", "--db", lidx, write("old.jsonl", late.String()))
	for i := range 30 {
		late.WriteString(fmt.Sprintf("{\"id\":\"late%02d\",\"text\":\"document %d of a long night, %d words of its own %d\"}\n", i, i, i*7, i*13))
	}
	_, errOut = mustRun(t, "filter", "--db", lidx, "--out", out, write("late.jsonl", late.String()))
	if got, _ := os.ReadFile(out); strings.Count(string(got), `{"id":"late`) != 30 || !strings.Contains(errOut, `30 records have an id the index does not hold (the first: "late00")`) {
		t.Errorf("filter of 1,050 indexed records and 30 records after them that the index never saw: %d of them kept (want 30), stderr %q", strings.Count(string(got), `{"id":"late`), errOut)
	}
	// A record whose text is not its document's (edited since the build)
	// is said: 200 such records gave a kept output with 253 exact copies,
	// without a word (a data engineer's review, NV2). The oracle: the
	// records edited here, each given its neighbour's text.
	var edited strings.Builder
	for i, line := range strings.SplitAfter(strings.TrimSuffix(late.String(), "\n"), "\n")[:1050] {
		if i < 40 && i%2 == 1 {
			line = strings.Replace(line, fmt.Sprintf("document %d of", i), fmt.Sprintf("document %d of", i-1), 1)
			line = strings.Replace(line, fmt.Sprintf(", %d words of its own %d", i*7, i*13), fmt.Sprintf(", %d words of its own %d", (i-1)*7, (i-1)*13), 1)
		}
		edited.WriteString(line)
	}
	_, errOut = mustRun(t, "filter", "--db", lidx, "--out", out, write("edited.jsonl", edited.String()))
	if !strings.Contains(errOut, `20 of the first 200 records whose document's text the index keeps have another text than it (the first: "old0001")`) {
		t.Errorf("filter of 20 records edited since the build: stderr %q", errOut)
	}
	if _, errOut = mustRun(t, "filter", "--db", lidx, "--out", out, write("old.jsonl", late.String()[:strings.Index(late.String(), `{"id":"late00"`)])); strings.Contains(errOut, "another text") {
		t.Errorf("filter of the records as built: stderr %q", errOut)
	}
	// An id whose last record is the one built is not edited, whatever
	// its earlier records hold: the build keeps an id's last record (a
	// read-through's R3: the first was compared).
	repeated := write("repeated.jsonl", "{\"id\":\"old0000\",\"text\":\"an earlier version, replaced within the input\"}\n"+late.String()[:strings.Index(late.String(), `{"id":"late00"`)])
	if _, errOut = mustRun(t, "filter", "--db", lidx, "--out", out, repeated); strings.Contains(errOut, "another text") {
		t.Errorf("filter of an input that repeats an id, its last record as built: stderr %q", errOut)
	}
	// --strict refuses them, writing nothing (the output is the last
	// run's), and takes the records as built.
	before, _ := os.ReadFile(out)
	for _, tc := range []struct{ input, want string }{
		{"late.jsonl", `30 records have an id the index does not hold (the first: "late00")`},
		{"edited.jsonl", `20 of the first 200 records compared have another text than their document's (the first: "old0001")`},
	} {
		_, errOut, code := runLine([]string{"filter", "--strict", "--db", lidx, "--out", out, filepath.Join(dir, tc.input)}, "")
		if after, _ := os.ReadFile(out); code != 1 || !strings.Contains(errOut, "filter cannot deduplicate every record of the inputs (--strict): "+tc.want) || !bytes.Equal(after, before) {
			t.Errorf("filter --strict of %s: exit %d, %q, output changed %v; want exit 1 naming %q", tc.input, code, errOut, !bytes.Equal(after, before), tc.want)
		}
	}
	if _, errOut = mustRun(t, "filter", "--strict", "--db", lidx, "--out", out, filepath.Join(dir, "old.jsonl")); strings.Contains(errOut, "note:") {
		t.Errorf("filter --strict of the records as built: stderr %q", errOut)
	}
	// Records with empty texts, which the build skipped, are not ids the
	// index lacks.
	withEmpty := write("with-empty.jsonl", part.String()+"{\"id\":\"e1\",\"text\":\"\"}\n{\"id\":\"e2\",\"text\":\" ... \"}\n")
	eidx := filepath.Join(dir, "eidx")
	mustRun(t, "build", "--db", eidx, withEmpty)
	if _, errOut = mustRun(t, "filter", "--db", eidx, "--out", out, withEmpty); strings.Contains(errOut, "not in the index") {
		t.Errorf("filter of inputs with empty texts: %q", errOut)
	}
	// Nor are ids no index takes, which a build with --skip-bad skipped
	// (the operator's case: filter failed on its sample and wrote
	// nothing): such a record is kept as read.
	withBad := write("with-bad.jsonl", part.String()+fmt.Sprintf("{\"id\":%q,\"text\":\"a long id's document, with words\"}\n", strings.Repeat("x", 5000))+
		"{\"id\":\"\",\"text\":\"an empty id's document, with words\"}\n")
	bidx := filepath.Join(dir, "bidx")
	mustRun(t, "build", "--db", bidx, "--skip-bad", withBad)
	_, errOut = mustRun(t, "filter", "--db", bidx, "--out", out, withBad)
	if got, _ := os.ReadFile(out); strings.Count(string(got), "\n") != 12 || strings.Contains(errOut, "not in the index") {
		t.Errorf("filter of inputs with ids no index takes: %d records kept (want the 10 kept and the 2 bad), stderr %q", strings.Count(string(got), "\n"), errOut)
	}
}

// Ensure that a byte-for-byte copy of a record whose id a cluster drops is
// removed with it and counted as a copy, not as a record of other content.
// The build inserts a repeated id where its last record is, so here b
// (inserted before a's last record) is the one kept.
func TestFilterCopyOfADroppedRecord(t *testing.T) {
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	a := fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n", text)
	b := fmt.Sprintf("{\"id\":\"b\",\"text\":%q}\n", text+"!")
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(a+b+a), 0o644)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, in)
	kept, removed := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "removed.jsonl")
	_, errOut := mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, in)
	if got, _ := os.ReadFile(kept); string(got) != b {
		t.Errorf("kept %q, want b", got)
	}
	got, _ := os.ReadFile(removed)
	if n := strings.Count(string(got), `"duplicate_of":"b"`); n != 2 {
		t.Errorf("removed %q: want both records of a as duplicates of b", got)
	}
	if !strings.Contains(errOut, "1 record was a copy, byte for byte") || strings.Contains(errOut, "other content") {
		t.Errorf("the summary: %q", errOut)
	}
}

// Ensure that filter says when it removed records as near-duplicates of a
// document no input holds (one the index has from an earlier build it
// extends): the output then keeps no member of their cluster, and the run
// said nothing of it. The oracle is the case built by hand: X (only in
// the first build's input) and Y (only in the second's) are at Jaccard
// 0.98, Z is in both.
func TestFilterNotesKeptDocumentsOutsideTheInputs(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := `{"id":"X","text":"the quick brown fox jumps over the lazy dog near the river bank"}`
	y := `{"id":"Y","text":"the quick brown fox jumps over the lazy dog near the river bank!"}`
	z := `{"id":"Z","text":"completely unrelated text about databases and storage engines"}`
	v1, v2 := write("v1.jsonl", x, z), write("v2.jsonl", z, y)
	mustRun(t, "build", "--db", idx, v1)
	mustRun(t, "build", "--db", idx, v2)
	out, removed := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "removed.jsonl")
	_, errOut := mustRun(t, "filter", "--db", idx, "--out", out, "--removed", removed, v2)
	if got, _ := os.ReadFile(out); string(got) != z+"\n" {
		t.Errorf("kept %q, want Z alone (Y's cluster keeps X)", got)
	}
	if got, _ := os.ReadFile(removed); !strings.Contains(string(got), `"duplicate_of":"X"`) {
		t.Errorf("removed %q, want Y as X's duplicate", got)
	}
	if !strings.Contains(errOut, "1 removed record is a near-duplicate of 1 document that no input holds") {
		t.Errorf("filter said nothing of Y's kept document being in no input: %q", errOut)
	}
	// With both inputs, X is read: no note.
	if _, errOut := mustRun(t, "filter", "--db", idx, "--out", out, v1, v2); strings.Contains(errOut, "no input holds") {
		t.Errorf("filter of every input noted kept documents outside them: %q", errOut)
	}
}

// Ensure that filter passes over a directory's entries that are not
// records (a link to a directory), naming them, as insert does: it
// refused the whole input as holding a record it could not copy.
func TestFilterSkipsDirectoryLinks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(filepath.Join(in, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"a","text":"alpha beta gamma delta epsilon"}` + "\n" + `{"id":"b","text":"alpha beta gamma delta epsilon!"}` + "\n"
	if err := os.WriteFile(filepath.Join(in, "x.jsonl"), []byte(docs), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(in, "ldir")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	idx := filepath.Join(dir, "idx")
	// A build stops at it, unless told to skip bad records: its
	// documents may be meant (with --delete-missing, passed over, they
	// were deleted).
	if _, errOut, code := runLine([]string{"build", "--db", idx, "--format", "jsonl", in}, ""); code != 1 || !strings.Contains(errOut, "a symbolic link to a directory") {
		t.Fatalf("build of a directory with a link to a directory: exit %d %s", code, errOut)
	}
	mustRun(t, "insert", "--db", idx, "--format", "jsonl", "--skip-bad", in)
	kept := filepath.Join(dir, "kept.jsonl")
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--format", "jsonl", "--out", kept, in}, "")
	b, _ := os.ReadFile(kept)
	if code != 0 || !strings.Contains(errOut, "skipped "+filepath.Join(in, "ldir")) || string(b) != `{"id":"a","text":"alpha beta gamma delta epsilon"}`+"\n" {
		t.Errorf("filter of a directory with a link to a directory: exit %d %s; kept %q", code, errOut, b)
	}
}

// Ensure that filter refuses to compress a Parquet output (a Parquet file
// compresses its own columns): --compress gzip was ignored silently, as
// was an output named kept.parquet.gz, which then held plain Parquet.
// Nothing is written, and the input's index is untouched.
func TestFilterParquetRefusesACompression(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/parquet-arrow/docs.parquet"
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "--threshold", "0.7", in)
	for _, args := range [][]string{
		{"--compress", "gzip", "--out", filepath.Join(dir, "kept.parquet")},
		{"--compress", "zstd", "--out", filepath.Join(dir, "kept.parquet")},
		{"--out", filepath.Join(dir, "kept.parquet.gz")},
		{"--out", filepath.Join(dir, "kept.parquet"), "--removed", filepath.Join(dir, "removed.parquet.zst")},
	} {
		out, errOut, code := runLine(append(append([]string{"filter", "--db", idx}, args...), in), "")
		if code == 0 || !strings.Contains(errOut, "compresses its columns itself") {
			t.Errorf("filter %v: exit %d, stdout %q, stderr %q; want it refused", args, code, out, errOut)
		}
		if names, _ := filepath.Glob(filepath.Join(dir, "*.parquet*")); len(names) != 0 {
			t.Fatalf("filter %v left %v", args, names)
		}
	}
	kept := filepath.Join(dir, "kept.parquet")
	mustRun(t, "filter", "--db", idx, "--compress", "none", "--out", kept, in)
	if _, rows := parquetFileRows(t, kept); len(rows) == 0 {
		t.Fatal("no rows kept")
	}
}

// Ensure that export --all --salvage writes every document of a damaged
// index that can be read, names the others on stderr, and exits 1; that
// --salvage wants --all (an operator's review, O3). The oracle: the
// generated input's ids, each either in the output (with its text) or
// named on stderr.
func TestExportSalvage(t *testing.T) {
	dir := shortDir(t)
	idx, in, out := filepath.Join(dir, "idx"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	// NB: texts that share most of their words, so a block of records
	// compresses small: Pebble searches a damaged block for a flipped bit
	// at every read of it, in time quadratic in its size on disk (about
	// 0.1 s a read for generated texts; the salvage makes dozens).
	var lines strings.Builder
	shared := strings.Repeat("the quick brown fox jumps over the lazy dog and runs away; ", 20)
	for i := range 3000 {
		fmt.Fprintf(&lines, "{\"id\":\"doc-%04d\",\"text\":\"document %d, number %d: %s\"}\n", i, i, i*7919%3000, shared)
	}
	if err := os.WriteFile(in, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, "build", "--db", idx, "--progress", "none", in)
	tables, _ := filepath.Glob(filepath.Join(idx, "*.sst"))
	var records string
	var size int64
	for _, p := range tables {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			records, size = p, fi.Size()
		}
	}
	f, err := os.OpenFile(records, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, size/2)
	f.Close()
	if _, errOut, code := runLine([]string{"export", "--db", idx, "--salvage"}, ""); code != 2 || !strings.Contains(errOut, "--salvage goes with --all") {
		t.Errorf("--salvage without --all: exit %d %s", code, errOut)
	}
	_, errOut, code := runLine([]string{"export", "--db", idx, "--all", "--salvage", "--out", out}, "")
	if code != exitDamaged || !strings.Contains(errOut, "export --salvage passed over 1 range of unreadable records") {
		t.Fatalf("export --salvage: exit %d\n%s", code, errOut)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(mustRead(t, in)), "\n") {
		var d struct{ ID, Text string }
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		want[d.ID] = d.Text
	}
	got := 0
	for _, line := range strings.Split(strings.TrimSpace(mustRead(t, out)), "\n") {
		var d struct{ ID, Text string }
		if err := json.Unmarshal([]byte(line), &d); err != nil || want[d.ID] != d.Text {
			t.Fatalf("exported %q: %v, or not the input's text", line, err)
		}
		delete(want, d.ID)
		got++
	}
	var named []string
	for _, line := range strings.Split(errOut, "\n") {
		if ids, ok := strings.CutPrefix(line, "lshdb: their ids: "); ok {
			named = append(named, strings.Fields(ids)...)
		}
	}
	slices.Sort(named)
	if lost := slices.Sorted(maps.Keys(want)); len(lost) == 0 || !slices.Equal(named, lost) {
		t.Fatalf("%d exported; the ids named lost %q, want the ones not exported %q", got, named, lost)
	}
}

// mustRead returns the file's contents.
func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFilterOutputsBothOrNeither: where one of filter's two files cannot
// be written out (a full disk, found at its last flush), neither
// replaces last night's: both keep their old contents, exit 1. NB: each
// was renamed in turn, and the other file was replaced (a nightly
// operator's review, N1). It mounts a small tmpfs (root; skipped
// elsewhere) for the file that fails, either one.
func TestFilterOutputsBothOrNeither(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, out)
	}
	defer exec.Command("umount", small).Run()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"gen", "--n", "2000", "--seed", "3", "--out", corpus}, ""); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, corpus}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, full := range []string{"--out", "--removed"} {
		paths := map[string]string{"--out": filepath.Join(dir, "kept.jsonl"), "--removed": filepath.Join(dir, "removed.jsonl")}
		paths[full] = filepath.Join(small, strings.TrimPrefix(full, "--")+".jsonl")
		for flag, p := range paths {
			if err := os.WriteFile(p, []byte("last night's "+flag+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, errOut, code := runLine([]string{"filter", "--db", idx, "--out", paths["--out"], "--removed", paths["--removed"], corpus}, "")
		if code != 1 || !strings.Contains(errOut, full+" "+paths[full]) || !strings.Contains(errOut, "no space left on device") {
			t.Fatalf("filter with %s on a full disk: exit %d: %s", full, code, errOut)
		}
		for flag, p := range paths {
			if b, err := os.ReadFile(p); err != nil || string(b) != "last night's "+flag+"\n" {
				t.Fatalf("with %s on a full disk, %s %s holds %d bytes (%v), not last night's", full, flag, p, len(b), err)
			}
		}
		if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
			t.Fatalf("left beside the outputs: %q", names)
		}
		os.Remove(paths[full])
	}
}

// Ensure that export refuses --output table, which it took and then wrote
// JSON Lines (a nightly output review's O7), and that --output json and
// no --output write the same lines.
func TestExportOutputFlag(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	if out, errOut, code := runLine([]string{"export", "--db", idx, "--all", "--output", "table"}, ""); code != 2 || out != "" || !strings.Contains(errOut, "--output table: export writes JSON Lines") {
		t.Errorf("export --output table: exit %d: %s%s", code, out, errOut)
	}
	// NB: a clustering's flags with --all, which clusters nothing, were
	// taken silently (a bad-input review, B15).
	for _, f := range [][]string{{"--mode", "components"}, {"--keep", "last"}, {"--threshold", "0.5"}} {
		args := append([]string{"export", "--db", idx, "--all"}, f...)
		if out, errOut, code := runLine(args, ""); code != 2 || out != "" || !strings.Contains(errOut, f[0]+" has nothing to do") {
			t.Errorf("export --all %s: exit %d: %s%s", strings.Join(f, " "), code, out, errOut)
		}
	}
	plain, _ := mustRun(t, "export", "--db", idx, "--all")
	js, _ := mustRun(t, "export", "--db", idx, "--all", "--output", "json")
	if plain != js || strings.Count(plain, "\n") != 6 {
		t.Errorf("export without --output:\n%s\nwith --output json:\n%s", plain, js)
	}
}

// Ensure that every output name ending in a compression lshdb writes
// (.gz, .gzip, .bgz, .zst, .zstd) holds that compression, for export and
// filter alike: filter wrote a .gzip output plain, where gen's nameWriter
// gzipped it. Oracle: the standard library's gzip and klauspost's zstd
// readers give back the plain output's bytes.
func TestOutputCompressionByEveryName(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/cmd/inputs/docs.jsonl"
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, in)
	plainExport, _ := mustRun(t, "export", "--db", idx, "--all")
	plainFilter := filepath.Join(dir, "plain.jsonl")
	mustRun(t, "filter", "--db", idx, "--out", plainFilter, in)
	wantFilter, _ := os.ReadFile(plainFilter)
	for _, ext := range []string{".gz", ".gzip", ".bgz", ".zst", ".zstd"} {
		for _, c := range []struct {
			cmd  string
			want []byte
		}{{"export", []byte(plainExport)}, {"filter", wantFilter}} {
			out := filepath.Join(dir, c.cmd+".jsonl"+ext)
			args := []string{c.cmd, "--db", idx, "--out", out}
			if c.cmd == "export" {
				args = append(args, "--all")
			} else {
				args = append(args, in)
			}
			mustRun(t, args...)
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r io.Reader
			if strings.HasPrefix(ext, ".zst") {
				zr, err := zstd.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				defer zr.Close()
				r = zr
			} else if r, err = gzip.NewReader(bytes.NewReader(raw)); err != nil {
				t.Fatalf("%s %s: not gzip: %v", c.cmd, ext, err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, c.want) || len(c.want) == 0 {
				t.Errorf("%s --out *%s: %v, %d bytes, want the plain output's %d", c.cmd, ext, err, len(got), len(c.want))
			}
		}
	}
}

// TestFilterKilledBetweenRenames: a run killed between the renames of its
// two files left tonight's kept records beside last night's removed ones,
// each whole (a data-safety review). At that moment (sinksRenaming) the
// --removed file must now be missing, never last night's; after the run
// both are tonight's. The oracle: last night's bytes, written by hand,
// and the same run to standard output. filter, export, and pairs --out
// with --clusters.
func TestFilterKilledBetweenRenames(t *testing.T) {
	dir := t.TempDir()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"gen", "--n", "300", "--seed", "5", "--out", corpus}, ""); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"build", "--db", idx, corpus}, ""); code != 0 {
		t.Fatal(errOut)
	}
	kept, removed := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "removed.jsonl")
	for _, cmd := range [][]string{
		{"filter", "--db", idx, corpus},
		{"export", "--db", idx},
	} {
		for _, p := range []string{kept, removed} {
			if err := os.WriteFile(p, []byte("last night's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var between string
		sinksRenaming = func() {
			k, _ := os.ReadFile(kept)
			_, err := os.Stat(removed)
			between = fmt.Sprintf("kept %q…, removed: %v", string(k[:min(len(k), 12)]), err)
			if !errors.Is(err, fs.ErrNotExist) || string(k) == "last night's\n" {
				t.Errorf("%s: between the renames, %s; want the new kept file and no removed one", cmd[0], between)
			}
		}
		args := append(slices.Clone(cmd), "--out", kept, "--removed", removed)
		if _, errOut, code := runLine(args, ""); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		sinksRenaming = nil
		if between == "" {
			t.Fatalf("%s: the hook between the renames did not run", cmd[0])
		}
		want, _, code := runLine(cmd, "")
		if code != 0 {
			t.Fatal(cmd)
		}
		if got, err := os.ReadFile(kept); err != nil || string(got) != want {
			t.Errorf("%s: --out holds %d bytes (%v), want the %d of standard output", cmd[0], len(got), err, len(want))
		}
		if got, err := os.ReadFile(removed); err != nil || len(got) == 0 || string(got) == "last night's\n" {
			t.Errorf("%s: --removed holds %q… (%v), want tonight's", cmd[0], got[:min(len(got), 20)], err)
		}
	}
	// pairs --out and --clusters: the clusters file waits for the pairs'.
	for _, p := range []string{kept, removed} {
		if err := os.WriteFile(p, []byte("last night's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	between := ""
	sinksRenaming = func() {
		k, _ := os.ReadFile(kept)
		_, err := os.Stat(removed)
		between = fmt.Sprintf("pairs %q…, clusters: %v", string(k[:min(len(k), 12)]), err)
		if !errors.Is(err, fs.ErrNotExist) || string(k) == "last night's\n" {
			t.Errorf("pairs: between the renames, %s; want the new pairs file and no clusters file", between)
		}
	}
	defer func() { sinksRenaming = nil }()
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--threshold", "0.5", "--output", "json", "--out", kept, "--clusters", removed}, ""); code != 0 {
		t.Fatalf("pairs: exit %d: %s", code, errOut)
	}
	if between == "" {
		t.Fatal("pairs: the hook between the renames did not run")
	}
	for _, p := range []string{kept, removed} {
		if got, err := os.ReadFile(p); err != nil || len(got) == 0 || string(got) == "last night's\n" {
			t.Errorf("pairs: %s holds %q… (%v), want tonight's", p, got[:min(len(got), 20)], err)
		}
	}
}

// Ensure that duplicate_of has the type of the ids it names, so that the
// removed records join the kept ones as they are (an ML dataset user's
// ML1: pandas refuses to merge an int64 column with a string one): with
// integer ids, a JSON number in JSON Lines and an int64 column in
// Parquet, equal to the id of the record kept (the oracle: the fox's
// near-copy names the fox's id); string ids stay strings.
func TestFilterDuplicateOfHasTheIDsType(t *testing.T) {
	fox := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	other := "an entirely different text about the weather in the mountains this week"
	dir := t.TempDir()
	// JSON Lines: numeric ids, and string ids.
	for _, c := range []struct {
		name string
		ids  [3]string
		want string
	}{
		{"num.jsonl", [3]string{"7", "8", "9"}, `"duplicate_of":7,`},
		{"str.jsonl", [3]string{`"7"`, `"8"`, `"9"`}, `"duplicate_of":"7",`},
	} {
		in := filepath.Join(dir, c.name)
		body := fmt.Sprintf("{\"id\":%s,\"text\":%q}\n{\"id\":%s,\"text\":%q}\n{\"id\":%s,\"text\":%q}\n", c.ids[0], fox, c.ids[1], other, c.ids[2], fox+"!")
		if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		idx := filepath.Join(dir, c.name+".idx")
		mustRun(t, "build", "--db", idx, in)
		removed := filepath.Join(dir, c.name+".removed.jsonl")
		mustRun(t, "filter", "--db", idx, "--out", filepath.Join(dir, c.name+".kept.jsonl"), "--removed", removed, in)
		got, err := os.ReadFile(removed)
		if err != nil || strings.Count(string(got), "\n") != 1 || !strings.Contains(string(got), c.want) {
			t.Errorf("%s: removed %q (%v), want one record with %s", c.name, got, err, c.want)
		}
	}
	// Parquet: an int64 id column.
	type row struct {
		ID   int64  `parquet:"id"`
		Text string `parquet:"text"`
	}
	in := filepath.Join(dir, "num.parquet")
	writeParquet(t, in, []row{{70, fox}, {80, other}, {90, fox + "!"}})
	idx := filepath.Join(dir, "parquet.idx")
	mustRun(t, "build", "--db", idx, in)
	removed := filepath.Join(dir, "removed.parquet")
	mustRun(t, "filter", "--db", idx, "--out", filepath.Join(dir, "kept.parquet"), "--removed", removed, in)
	schema, rows := parquetFileRows(t, removed)
	leaf, ok := schema.Lookup("duplicate_of")
	if !ok || leaf.Node.Type().Kind() != parquet.Int64 {
		t.Fatalf("removed.parquet's duplicate_of: %v (found %v), want int64", leaf.Node, ok)
	}
	if len(rows) != 1 || rows[0][0].Int64() != 90 || rows[0][leaf.ColumnIndex].Int64() != 70 {
		t.Errorf("removed rows %v, want the row of id 90 with duplicate_of 70", rows)
	}
	// --annotate: the column of every record, null for the kept ones.
	annotated := filepath.Join(dir, "annotated.parquet")
	mustRun(t, "filter", "--db", idx, "--annotate", "--out", annotated, in)
	schema, rows = parquetFileRows(t, annotated)
	if leaf, ok := schema.Lookup("duplicate_of"); !ok || leaf.Node.Type().Kind() != parquet.Int64 || len(rows) != 3 ||
		!rows[0][leaf.ColumnIndex].IsNull() || rows[2][leaf.ColumnIndex].Int64() != 70 {
		t.Errorf("annotated.parquet: duplicate_of %v, rows %v", leaf.Node, rows)
	}
}

// Ensure that filter counts the records it keeps without comparing them,
// those of a blank text (which a build skips as empty), where it kept
// them among the others without a word (an ML dataset user's ML5); the
// oracle: the two blank records written by hand, and the build's own
// count of empty texts.
func TestFilterCountsBlankTexts(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	fox := "the quick brown fox jumps over the lazy dog and runs far away into the forest"
	body := fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n{\"id\":\"b\",\"text\":\"\"}\n{\"id\":\"c\",\"text\":%q}\n{\"id\":\"d\",\"text\":\" \\t \"}\n", fox, fox+"!")
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	if out, _ := mustRun(t, "build", "--db", idx, in); !strings.Contains(out, "2 empty texts skipped") {
		t.Fatalf("build: %s", out)
	}
	kept := filepath.Join(dir, "kept.jsonl")
	_, errOut := mustRun(t, "filter", "--db", idx, "--out", kept, in)
	if !strings.Contains(errOut, "3 kept, 1 removed") || !strings.Contains(errOut, "lshdb: note: 2 records have a blank text") {
		t.Errorf("filter's summary and notes:\n%s", errOut)
	}
	if got, _ := os.ReadFile(kept); strings.Count(string(got), "\n") != 3 || strings.Contains(string(got), `"id":"c"`) {
		t.Errorf("kept:\n%s", got)
	}

	// Under nfkc, a text of format characters alone (zero-width spaces,
	// a soft hyphen, a byte order mark) is empty too: the note counts
	// what the build skipped (a multilingual user's U4: 1 of 3). The
	// oracle: the build's own count of empty texts.
	body += "{\"id\":\"e\",\"text\":\"\\u200b\\u200b\\u00ad\"}\n{\"id\":\"f\",\"text\":\"\\ufeff\"}\n"
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	nfkc := filepath.Join(dir, "nfkc")
	mustRun(t, "create", "--db", nfkc, "--normalization", "nfkc")
	if out, _ := mustRun(t, "build", "--db", nfkc, in); !strings.Contains(out, "4 empty texts skipped") {
		t.Fatalf("build under nfkc: %s", out)
	}
	if _, errOut := mustRun(t, "filter", "--db", nfkc, "--out", kept, in); !strings.Contains(errOut, "lshdb: note: 4 records have a blank text") {
		t.Errorf("filter under nfkc: %s", errOut)
	}
}
