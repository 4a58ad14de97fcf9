package docio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// The rows the Parquet tests write: a string id, a text (dictionary
// encoded, so that repeats are stored once), and other columns that the
// reader must pass over.
type pqRow struct {
	Lang  string  `parquet:"lang"`
	ID    string  `parquet:"id"`
	Text  string  `parquet:"text,dict"`
	Score float64 `parquet:"score"`
}

type pqIntRow struct {
	Num  int64   `parquet:"num"`
	Body *string `parquet:"body,optional"`
}

func writeParquet[T any](t *testing.T, path string, rows []T, opts ...parquet.WriterOption) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Ensure that a Parquet file's rows come out as records, in order, with
// the id and text of the chosen columns (byte for byte, multibyte and
// empty texts included), whatever the file's compression and row-group
// split, told by name or, without the name, by content.
func TestParquetRecords(t *testing.T) {
	var rows []pqRow
	for i := range 2500 {
		text := fmt.Sprintf("document %d: the quick brown fox, %d times", i, i%7)
		switch i % 500 {
		case 3:
			text = "" // an empty text is a record like any other
		case 4:
			text = "naïve café — 東京 \x00 and a NUL"
		}
		rows = append(rows, pqRow{Lang: "en", ID: fmt.Sprintf("doc-%04d", i), Text: text, Score: float64(i)})
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		codec compress.Codec
	}{{"snappy", &parquet.Snappy}, {"zstd", &parquet.Zstd}, {"gzip", &parquet.Gzip}, {"none", &parquet.Uncompressed}} {
		for _, file := range []string{"rows-" + c.name + ".parquet", "rows-" + c.name + ".data"} {
			path := filepath.Join(dir, file)
			writeParquet(t, path, rows, parquet.Compression(c.codec), parquet.MaxRowsPerRowGroup(700))
			var got []Record
			for rec, err := range Read(context.Background(), []string{path}, nil, Options{}) {
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				got = append(got, rec)
			}
			if len(got) != len(rows) {
				t.Fatalf("%s: %d records, want %d", file, len(got), len(rows))
			}
			for i, rec := range got {
				if rec.ID != rows[i].ID || rec.Text != rows[i].Text || rec.Line != i+1 || rec.File != path {
					t.Fatalf("%s: record %d = %+v, want %s %q at row %d", file, i, rec, rows[i].ID, rows[i].Text, i+1)
				}
			}
		}
	}
}

// Ensure that an integer id column gives decimal ids, that --text-col
// chooses the column, that a null text is a bad record naming its row
// (and reading goes on), and that a missing column, a list column, a
// Parquet input on stdin and a file that is not Parquet fail clearly.
func TestParquetColumnsAndErrors(t *testing.T) {
	dir := t.TempDir()
	body := func(s string) *string { return &s }
	path := filepath.Join(dir, "ints.parquet")
	writeParquet(t, path, []pqIntRow{{7, body("seven")}, {-3, nil}, {1 << 40, body("big")}})
	var ids, texts []string
	var bad []*RecordError
	for rec, err := range Read(context.Background(), []string{path}, nil, Options{IDCol: "num", TextCol: "body"}) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			bad = append(bad, re)
		case err != nil:
			t.Fatal(err)
		default:
			ids, texts = append(ids, rec.ID), append(texts, rec.Text)
		}
	}
	if strings.Join(ids, ",") != "7,1099511627776" || strings.Join(texts, ",") != "seven,big" {
		t.Errorf("ids %v texts %v", ids, texts)
	}
	if len(bad) != 1 || bad[0].Line != 2 || !errors.Is(bad[0], ErrBadRecord) || !strings.Contains(bad[0].Error(), "null") {
		t.Errorf("bad records %v, want row 2's null text", bad)
	}

	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"missing column", Options{}, `have no "id" column for the ids (--id-col names it; --id-from line or hash makes ids) and no "text" column for the texts (--text-col names it)`},
		{"missing text column", Options{IDCol: "num"}, `have no "text" column for the texts (--text-col names it)`},
		{"text not a string", Options{IDCol: "body", TextCol: "num"}, "holds INT64 values"},
	} {
		err := firstErr(Read(context.Background(), []string{path}, nil, c.o))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := firstErr(Read(context.Background(), []string{"-"}, strings.NewReader(string(raw)), Options{Format: "parquet"})); !errors.Is(err, ErrNeedsFile) {
		t.Errorf("parquet on stdin: %v, want ErrNeedsFile", err)
	}
	notPQ := filepath.Join(dir, "not.parquet")
	if err := os.WriteFile(notPQ, []byte(`{"id":"a","text":"b"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := firstErr(Read(context.Background(), []string{notPQ}, nil, Options{})); err == nil || !strings.Contains(err.Error(), "not a readable Parquet file") {
		t.Errorf("a JSON file named .parquet: %v", err)
	}
	type listRow struct {
		ID   string   `parquet:"id"`
		Text []string `parquet:"text,list"`
	}
	lists := filepath.Join(dir, "lists.parquet")
	writeParquet(t, lists, []listRow{{"a", []string{"x", "y"}}})
	if err := firstErr(Read(context.Background(), []string{lists}, nil, Options{TextCol: "text.list.element"})); err == nil || !strings.Contains(err.Error(), "repeated") {
		t.Errorf("a list column: %v", err)
	}
}

// firstErr returns the first error a Read yields.
func firstErr(seq func(func(Record, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// Ensure that Options.Progress reports the bytes of the files as stored
// (compressed ones before decompression; Parquet by the share of its rows
// read), so that the sum is each file's size.
func TestProgressBytes(t *testing.T) {
	dir := t.TempDir()
	plain := bytes.Repeat([]byte("{\"id\":\"a\",\"text\":\"alpha\"}\n{\"id\":\"b\",\"text\":\"beta\"}\n"), 200)
	files := map[string][]byte{"a.jsonl": plain, "b.jsonl.gz": gzipBytes(plain), "c.jsonl.zst": zstdBytes(plain), "d.csv": []byte("id,text\nx,one\ny,two\n")}
	var want int64
	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		want += int64(len(b))
	}
	pq := filepath.Join(dir, "e.parquet")
	writeParquet(t, pq, []pqRow{{ID: "p1", Text: "one"}, {ID: "p2", Text: "two"}})
	st, err := os.Stat(pq)
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, pq)
	want += st.Size()
	var got atomic.Int64
	n := 0
	for _, err := range Read(context.Background(), paths, nil, Options{Progress: func(b int64) { got.Add(b) }}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if got.Load() != want || n == 0 {
		t.Errorf("progress reported %d bytes over %d records, want the files' %d", got.Load(), n, want)
	}
}

// Ensure that an id of an unsigned integer column is read as unsigned
// (2^63 and up, 2^31 and up), and one of a signed column as signed: they
// were all read signed, and such ids came out negative. Oracle: the
// values written, formatted by strconv.
func TestParquetUnsignedIDs(t *testing.T) {
	type row struct {
		U64  uint64 `parquet:"u64"`
		U32  uint32 `parquet:"u32"`
		I32  int32  `parquet:"i32"`
		Text string `parquet:"text"`
	}
	rows := []row{{1<<63 + 5, 1<<31 + 7, -5, "a"}, {math.MaxUint64, math.MaxUint32, math.MinInt32, "b"}, {3, 4, 5, "c"}}
	path := filepath.Join(t.TempDir(), "unsigned.parquet")
	writeParquet(t, path, rows)
	for _, c := range []struct {
		col  string
		want func(row) string
	}{
		{"u64", func(r row) string { return strconv.FormatUint(r.U64, 10) }},
		{"u32", func(r row) string { return strconv.FormatUint(uint64(r.U32), 10) }},
		{"i32", func(r row) string { return strconv.FormatInt(int64(r.I32), 10) }},
	} {
		var got, want []string
		for rec, err := range Read(context.Background(), []string{path}, nil, Options{IDCol: c.col, TextCol: "text"}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rec.ID)
		}
		for _, r := range rows {
			want = append(want, c.want(r))
		}
		if !slices.Equal(got, want) {
			t.Errorf("ids of column %s: %v, want %v", c.col, got, want)
		}
	}
}

// TestParquetTextNotUTF8: a Parquet text that is not UTF-8 (Latin-1 in a
// string column) is a bad record naming the column, as a CSV or JSON
// Lines one is: it was read as it was, and two texts that differ only in
// their accents became a pair of Jaccard 1.
func TestParquetTextNotUTF8(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latin1.parquet")
	writeParquet(t, path, []pqRow{
		{ID: "a", Text: "caf\xe9 cr\xe8me br\xfbl\xe9e"},
		{ID: "ok", Text: "café crème brûlée"},
		{ID: "b", Text: "caf\xe8 cr\xe9me br\xfcl\xe8e"},
	})
	var good []string
	bad := 0
	for rec, err := range Read(context.Background(), []string{path}, nil, Options{}) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			bad++
			if !strings.Contains(err.Error(), `field "text" is not valid UTF-8`) {
				t.Errorf("bad record: %v, want the text column named", err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			good = append(good, rec.ID)
		}
	}
	if bad != 2 || !slices.Equal(good, []string{"ok"}) {
		t.Errorf("%d bad records, good %q; want 2 bad and ok", bad, good)
	}
}

// TestParquetFormatDirectory: with Format parquet, a directory's files
// are read as Parquet (each was read as a text and refused as binary).
func TestParquetFormatDirectory(t *testing.T) {
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "docs.parquet"), []pqRow{{ID: "a", Text: "hello world"}, {ID: "b", Text: "goodbye world"}})
	var ids []string
	for rec, err := range Read(context.Background(), []string{dir}, nil, Options{Format: "parquet"}) {
		if err != nil {
			t.Fatalf("Format parquet, a directory: %v", err)
		}
		ids = append(ids, rec.ID)
	}
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("Format parquet, a directory: %q, want a and b", ids)
	}
}

// TestIDFromLineSameBaseName: with IDFrom line, a second file of the same
// base name (in another directory) is refused: its ids (BASE:LINE) were
// the first one's, and its records replaced the first one's as repeats.
func TestIDFromLineSameBaseName(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		name := "docs.jsonl"
		if d == "c" {
			name = "other.jsonl"
		}
		if err := os.WriteFile(filepath.Join(dir, d, name), []byte(`{"text":"one text of `+d+`"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(paths ...string) (ids []string, err error) {
		for rec, err := range Read(context.Background(), paths, nil, Options{IDFrom: "line"}) {
			if err != nil {
				return ids, err
			}
			ids = append(ids, rec.ID)
		}
		return ids, nil
	}
	a, b, c := filepath.Join(dir, "a", "docs.jsonl"), filepath.Join(dir, "b", "docs.jsonl"), filepath.Join(dir, "c", "other.jsonl")
	if ids, err := read(a, c); err != nil || !slices.Equal(ids, []string{"docs.jsonl:1", "other.jsonl:1"}) {
		t.Errorf("two base names: %q, %v", ids, err)
	}
	for _, paths := range [][]string{{a, b}, {dir}} { // NB: a directory with Format jsonl below
		var err error
		if len(paths) == 1 {
			for _, e := range Read(context.Background(), paths, nil, Options{IDFrom: "line", Format: "jsonl"}) {
				if e != nil {
					err = e
					break
				}
			}
		} else {
			_, err = read(paths...)
		}
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(fmt.Sprint(err), "same base name") {
			t.Errorf("%q: %v, want the same base name refused", paths, err)
		}
	}
}

// TestMaxRecordBytesBoundary: MaxRecordBytes bounds a record without its
// line end, whatever the line end: JSON Lines took up to 2 bytes more
// when a line ended in LF or ended the file, and CSV refused a record at
// the limit (its line end counted).
func TestMaxRecordBytesBoundary(t *testing.T) {
	dir := t.TempDir()
	rec21, rec20 := `{"id":"a","text":"b"}`, `{"id":"a","text":""}`
	for _, c := range []struct {
		name, body string
		ok         bool
	}{
		{"lf.jsonl", rec21 + "\n", false},
		{"crlf.jsonl", rec21 + "\r\n", false},
		{"noeol.jsonl", rec21, false},
		{"noeol22.jsonl", `{"id":"a","text":"bc"}`, false},
		{"at-lf.jsonl", rec20 + "\n", true}, // 20 bytes
		{"at-crlf.jsonl", rec20 + "\r\n", true},
		{"at-noeol.jsonl", rec20, true},
		{"at.csv", "id,text\na,012345678901234567\n", true}, // 20 bytes
		{"at-crlf.csv", "id,text\r\na,012345678901234567\r\n", true},
		{"over.csv", "id,text\na,0123456789012345678\n", false},   // 21
		{"multi.csv", "id,text\na,\"01\n0123456789012\"\n", true}, // 20 with its inner line end
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		var last error
		n := 0
		for _, err := range Read(context.Background(), []string{p}, nil, Options{MaxRecordBytes: 20}) {
			last, n = err, n+1
		}
		if n != 1 || (last == nil) != c.ok {
			t.Errorf("%s: %d records, the last %v; want accepted %v", c.name, n, last, c.ok)
		}
	}
}

// Ensure that a damaged Parquet file is an error naming it
// (ErrNeedsFile), not a panic of the Parquet library, which ended
// lshdb insert with a Go panic (a fuzz campaign's F1). The inputs: the
// arrow fixture with the bytes a fuzzer changed, each of which panicked
// inside parquet-go (a dictionary index out of range, an int32
// dictionary's lookup, a byte array's length past its page).
func TestParquetDamagedFile(t *testing.T) {
	orig, err := os.ReadFile(arrowFixture)
	if err != nil {
		t.Fatal(err)
	}
	for i, changes := range [][][3]int{
		{{11483, 0x25, 0x65}, {23424, 0x6c, 0xfc}, {27896, 0x5a, 0xec}, {30840, 0xf4, 0xfd}},
		{{7489, 0x2e, 0x2c}, {17091, 0x2b, 0x2a}, {24952, 0x24, 0xa4}, {25331, 0x68, 0x78}},
		{{5081, 0x01, 0x69}, {26508, 0x01, 0xe8}, {31843, 0x6f, 0x16}},
	} {
		b := slices.Clone(orig)
		for _, c := range changes {
			if int(b[c[0]]) != c[1] {
				t.Fatalf("damage %d: byte %d is %#x, want %#x (the fixture changed)", i, c[0], b[c[0]], c[1])
			}
			b[c[0]] = byte(c[2])
		}
		path := filepath.Join(t.TempDir(), "damaged.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var last error
		for _, err := range Read(context.Background(), []string{path}, nil, Options{}) {
			if err != nil {
				last = err
			}
		}
		if !errors.Is(last, ErrDamagedParquet) || !strings.Contains(last.Error(), path) {
			t.Errorf("damage %d: %v, want ErrDamagedParquet naming the file", i, last)
		}
	}
}

// FuzzParquet reads Parquet files made from the fixture's bytes, changed:
// the reading ends, with records or an error, and never panics (the
// Parquet library panicked on damaged files: a fuzz campaign's F1); a
// record it yields is one the reader would take from a sound file (a
// valid UTF-8 id and text).
func FuzzParquet(f *testing.F) {
	orig, err := os.ReadFile(arrowFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(orig)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "fuzz.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for rec, err := range Read(context.Background(), []string{path}, nil, Options{Format: "parquet"}) {
			if err == nil && (!utf8.ValidString(rec.ID) || !utf8.ValidString(rec.Text)) {
				t.Fatalf("record %d: an id or text that is not UTF-8: %q", rec.Line, rec.ID)
			}
		}
	})
}

// Ensure that an id or text column whose annotation makes its stored
// bytes or numbers something other than its text (UUID, TIMESTAMP, DATE,
// DECIMAL) is refused by its schema, naming the column and the type, with
// no row read: a DECIMAL(10,2) 1234.56 was the id "123456", a date its
// day number, a UUID 16 raw bytes (an input review, IN-4). Strings and
// integers, annotated so or not, are read.
func TestParquetAnnotatedColumns(t *testing.T) {
	dir := t.TempDir()
	type tsRow struct {
		ID   time.Time `parquet:"id,timestamp(millisecond)"`
		Text string    `parquet:"text"`
	}
	type dateRow struct {
		ID   time.Time `parquet:"id,date"`
		Text string    `parquet:"text"`
	}
	type uuidRow struct {
		ID   [16]byte `parquet:"id,uuid"`
		Text string   `parquet:"text"`
	}
	type decRow struct {
		ID   int64  `parquet:"id,decimal(2:10)"`
		Text string `parquet:"text"`
	}
	type uuidText struct {
		ID   string   `parquet:"id"`
		Text [16]byte `parquet:"text,uuid"`
	}
	type okRow struct {
		ID   int32  `parquet:"id"`
		Text string `parquet:"text,enum"`
	}
	when := time.Date(2023, 12, 8, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		file, want string
		write      func(string)
	}{
		{"ts.parquet", `the id column "id" holds TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS) values`, func(p string) { writeParquet(t, p, []tsRow{{when, "a text"}}) }},
		{"date.parquet", `the id column "id" holds DATE values`, func(p string) { writeParquet(t, p, []dateRow{{when, "a text"}}) }},
		{"uuid.parquet", `the id column "id" holds UUID values`, func(p string) { writeParquet(t, p, []uuidRow{{[16]byte{0x9f, 0x1c}, "a text"}}) }},
		{"dec.parquet", `the id column "id" holds DECIMAL(10,2) values`, func(p string) { writeParquet(t, p, []decRow{{123456, "a text"}}) }},
		{"uuidtext.parquet", `the text column "text" holds UUID values`, func(p string) { writeParquet(t, p, []uuidText{{"a", [16]byte{'a'}}}) }},
		{"ok.parquet", "", func(p string) { writeParquet(t, p, []okRow{{7, "a text"}}) }},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.file)
		c.write(p)
		var got []string
		var err error
		for rec, rerr := range Read(context.Background(), []string{p}, nil, Options{}) {
			if rerr != nil {
				err = rerr
				break
			}
			got = append(got, rec.ID+"="+rec.Text)
		}
		switch {
		case c.want == "" && (err != nil || strings.Join(got, ",") != "7=a text"):
			t.Errorf("%s: %q, %v", c.file, got, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "cast the column to a string first") || len(got) > 0):
			t.Errorf("%s: %q, %v; want %q", c.file, got, err, c.want)
		}
	}
}

// Ensure that a column whose name holds a dot can be named (it could not,
// and the message listed it among the columns it said were not there: an
// input review, IN-5), and that a name that is both such a column and a
// path into groups is refused as unclear, as in JSON Lines.
func TestParquetDottedColumnNames(t *testing.T) {
	dir := t.TempDir()
	type flatRow struct {
		URL  string `parquet:"meta.url"`
		Text string `parquet:"text"`
	}
	type bothRow struct {
		URL  string `parquet:"meta.url"`
		Meta struct {
			URL string `parquet:"url"`
		} `parquet:"meta"`
		Text string `parquet:"text"`
	}
	flat, both := filepath.Join(dir, "flat.parquet"), filepath.Join(dir, "both.parquet")
	writeParquet(t, flat, []flatRow{{"u1", "a text"}})
	r := bothRow{URL: "u1", Text: "a text"}
	r.Meta.URL = "u2"
	writeParquet(t, both, []bothRow{r})
	var got []string
	for rec, err := range Read(context.Background(), []string{flat}, nil, Options{IDCol: "meta.url"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.ID+"="+rec.Text)
	}
	if strings.Join(got, ",") != "u1=a text" {
		t.Fatalf("flat: %q", got)
	}
	if err := firstErr(Read(context.Background(), []string{both}, nil, Options{IDCol: "meta.url"})); err == nil || !strings.Contains(err.Error(), `both a column "meta.url" and that path into its groups`) {
		t.Fatalf("both: %v", err)
	}
}
