package docio

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func zstdBytes(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// collect reads paths (relative to dir) and returns one line per record,
// "FILE:LINE id=ID text=TEXT", and per bad record "bad FILE:LINE (id ID):
// cause", with file names relative to dir, and the fatal error.
func collect(t *testing.T, dir string, paths []string, stdin string, o Options) ([]string, error) {
	t.Helper()
	var abs []string
	for _, p := range paths {
		if p != "-" {
			p = filepath.Join(dir, p)
		}
		abs = append(abs, p)
	}
	rel := func(f string) string {
		if r, err := filepath.Rel(dir, f); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
		return f
	}
	var got []string
	for rec, err := range Read(context.Background(), abs, strings.NewReader(stdin), o) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("%v does not match ErrBadRecord", err)
			}
			got = append(got, fmt.Sprintf("bad %s (id %q): %v", pos(rel(re.File), re.Line), re.ID, re.Err))
		case err != nil:
			return got, err
		default:
			got = append(got, fmt.Sprintf("%s id=%s text=%q", pos(rel(rec.File), rec.Line), rec.ID, rec.Text))
		}
	}
	return got, nil
}

// Ensure that every format, compression and id option reads the records
// written by hand in its fixture, and reports the bad ones by file and
// line while reading on.
func TestRead(t *testing.T) {
	docsJSONL := []byte("{\"id\":\"a\",\"text\":\"alpha\"}\n{\"id\":\"b\",\"text\":\"beta\"}\n")
	bigLine := `{"id":"big","text":"` + strings.Repeat("x", 600<<10) + `"}` + "\n"
	cases := []struct {
		name    string
		files   map[string][]byte // relative path → content
		paths   []string
		stdin   string
		o       Options
		want    []string
		wantErr error // the fatal error, tested with errors.Is
		// wantText, if set, is in the fatal error's message.
		wantText string
	}{
		{name: "jsonl BOM CRLF", files: map[string][]byte{"d.jsonl": []byte("\xef\xbb\xbf{\"id\":\"a\",\"text\":\"x\"}\r\n\r\n{\"id\":\"b\",\"text\":\"y\"}\r\n")},
			paths: []string{"d.jsonl"},
			want:  []string{`d.jsonl:1 id=a text="x"`, `d.jsonl:3 id=b text="y"`}},
		{name: "csv BOM CRLF quoted newline", files: map[string][]byte{"d.csv": []byte("\xef\xbb\xbfid,text\r\na,\"x\r\ny, \"\"q\"\"\"\r\nb,z\r\n")},
			paths: []string{"d.csv"},
			want:  []string{`d.csv:2 id=a text="x\ny, \"q\""`, `d.csv:4 id=b text="z"`}},
		// NB: a lone CR that ends the input is not the text's (as in
		// encoding/csv); one inside a line is (a fuzz campaign, F6).
		{name: "csv lone CR at the end", files: map[string][]byte{"d.csv": []byte("id,text\na,x\ry\nb,z\r"), "q.csv": []byte("id,text\nc,\"w\"\r"), "t.tsv": []byte("id\ttext\nd\tv\r"), "j.jsonl": []byte("{\"id\":\"e\",\"text\":\"u\"}\r")},
			paths: []string{"d.csv", "q.csv", "t.tsv", "j.jsonl"},
			want:  []string{`d.csv:2 id=a text="x\ry"`, `d.csv:3 id=b text="z"`, `q.csv:2 id=c text="w"`, `t.tsv:2 id=d text="v"`, `j.jsonl:1 id=e text="u"`}},
		{name: "tsv BOM CRLF lenient quotes", files: map[string][]byte{"d.tsv": []byte("\xef\xbb\xbfkey\tbody\r\na\t12\" vinyl\r\nb\ty\r\n")},
			paths: []string{"d.tsv"}, o: Options{IDCol: "key", TextCol: "body"},
			want: []string{`d.tsv:2 id=a text="12\" vinyl"`, `d.tsv:3 id=b text="y"`}},
		// One column for both: the header was said to lack it for the
		// texts (the JSON Lines reader takes one field for both).
		{name: "csv id and text one column", files: map[string][]byte{"d.csv": []byte("text,other\nsame text,o\n")},
			paths: []string{"d.csv"}, o: Options{IDCol: "text", TextCol: "text"},
			want: []string{`d.csv:2 id=same text text="same text"`}},
		{name: "text file BOM CRLF", files: map[string][]byte{"notes.txt": []byte("\xef\xbb\xbfline one\r\nline two\r\n")},
			paths: []string{"notes.txt"},
			want:  []string{`notes.txt id=notes.txt text="line one\r\nline two\r\n"`}},
		{name: "format flag in any case", files: map[string][]byte{"d.data": []byte("id,text\na,x\n")},
			paths: []string{"d.data"}, o: Options{Format: "CSV"},
			want: []string{`d.data:2 id=a text="x"`}},
		{name: "gzip and zstd told by content", files: map[string][]byte{"g.data": gzipBytes(docsJSONL), "z.bin": zstdBytes(docsJSONL), "c.csv.zst": zstdBytes([]byte("id,text\nc,gamma\n"))},
			paths: []string{"g.data", "z.bin", "c.csv.zst"},
			want: []string{`g.data:1 id=a text="alpha"`, `g.data:2 id=b text="beta"`, `z.bin:1 id=a text="alpha"`, `z.bin:2 id=b text="beta"`,
				`c.csv.zst:2 id=c text="gamma"`}},
		// pzstd writes a skippable frame first (RFC 8878 3.1.2): 0x184D2A5?
		// little-endian, a 4-byte size, that many bytes.
		{name: "zstd after a skippable frame", files: map[string][]byte{"p.data": append([]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 0x4d, 0, 0, 0}, zstdBytes(docsJSONL)...)},
			paths: []string{"p.data"},
			want:  []string{`p.data:1 id=a text="alpha"`, `p.data:2 id=b text="beta"`}},
		{name: "stdin", paths: []string{"-"}, stdin: "{\"id\":\"s\",\"text\":\"from stdin\"}\n",
			want: []string{`stdin:1 id=s text="from stdin"`}},
		{name: "numeric and nested ids", files: map[string][]byte{"n.jsonl": []byte(`{"id":42,"text":"a"}
{"id":12345678901234567890,"text":"b"}
{"id":-1.5e3,"text":"c"}
{"id":true,"text":"d"}
{"id":null,"text":"e"}
`)}, paths: []string{"n.jsonl"},
			want: []string{`n.jsonl:1 id=42 text="a"`, `n.jsonl:2 id=12345678901234567890 text="b"`, `n.jsonl:3 id=-1.5e3 text="c"`,
				`bad n.jsonl:4 (id ""): field "id" is not a string or a number`, `bad n.jsonl:5 (id ""): field "id" is not a string or a number`}},
		{name: "dotted paths", files: map[string][]byte{"m.jsonl": []byte(`{"meta":{"url":"http://x/1"},"body":{"text":"one"}}
{"meta":{"url":7},"body":{"text":"two"}}
{"meta.url":"literal","body":{"text":"three"}}
{"meta":"flat","body":{"text":"four"}}
{"body":{"text":"five"}}
`)}, paths: []string{"m.jsonl"}, o: Options{IDField: "meta.url", TextField: "body.text"},
			want: []string{`m.jsonl:1 id=http://x/1 text="one"`, `m.jsonl:2 id=7 text="two"`, `m.jsonl:3 id=literal text="three"`,
				`bad m.jsonl:4 (id ""): no "meta.url" field ("meta" is not an object) (--id-field names the id's field; --id-from line or hash makes ids)`, `bad m.jsonl:5 (id ""): no "meta.url" field (--id-field names the id's field; --id-from line or hash makes ids)`}},
		{name: "id from line", files: map[string][]byte{"sub/h.jsonl": []byte("{\"text\":\"abc\"}\n\n{\"text\":\"def\"}\n"), "h.csv": []byte("text\nabc\n")},
			paths: []string{"sub/h.jsonl", "h.csv"}, o: Options{IDFrom: "LINE"},
			want: []string{`sub/h.jsonl:1 id=h.jsonl:1 text="abc"`, `sub/h.jsonl:3 id=h.jsonl:3 text="def"`, `h.csv:2 id=h.csv:2 text="abc"`}},
		// XXH64("abc", seed 0) = 44bc2cf5ad770999 (the reference test vector).
		{name: "id from hash", files: map[string][]byte{"h.jsonl": []byte("{\"id\":\"ignored\",\"text\":\"abc\"}\n")},
			paths: []string{"h.jsonl"}, o: Options{IDFrom: "hash"},
			want: []string{`h.jsonl:1 id=44bc2cf5ad770999 text="abc"`}},
		{name: "invalid UTF-8 and lone surrogate ids", files: map[string][]byte{"u.jsonl": []byte("{\"id\":\"u\xff1\",\"text\":\"a\"}\n{\"id\":\"u\\ud800\",\"text\":\"b\"}\n{\"id\":\"u\\ufffd\",\"text\":\"c\"}\n{\"id\":\"u\xef\xbf\xbd\",\"text\":\"d\"}\n")},
			paths: []string{"u.jsonl"},
			want: []string{"bad u.jsonl:1 (id \"\"): field \"id\" is not valid UTF-8: \"\\\"u\\xff1\\\"\"",
				`bad u.jsonl:2 (id ""): field "id" has an escape that is not a character (a lone surrogate): "u\ud800"`,
				"u.jsonl:3 id=u\ufffd text=\"c\"", "u.jsonl:4 id=u\ufffd text=\"d\""}},
		// A field named by a dotted path is read only when the path names
		// one value: a key repeated at any step of it, or a key holding
		// the whole path beside it, is a bad record (an input review,
		// IN-1 and IN-5: each was read as one of its values, without a
		// word); the metadata's field too.
		{name: "ambiguous dotted fields", files: map[string][]byte{"n.jsonl": []byte(`{"meta":{"url":"a","url":"b"},"doc":{"body":"t"}}` + "\n" +
			`{"meta.url":"x","meta":{"url":"y"},"doc":{"body":"t"}}` + "\n" +
			`{"meta":{"url":"c"},"doc":{"body":"one"},"doc":{"body":"two"}}` + "\n" +
			`{"meta":{"url":"ok"},"doc":{"body":"fine"},"x":{"url":1,"url":2}}` + "\n" +
			`{"meta":{"url":"m"},"doc":{"body":"b"},"m":1,"m":2}` + "\n")},
			paths: []string{"n.jsonl"}, o: Options{IDField: "meta.url", TextField: "doc.body", MetaField: "m"},
			want: []string{`bad n.jsonl:1 (id ""): field "meta.url" names more than one value ("url" appears more than once in "meta"): which one is the document's is unclear`,
				`bad n.jsonl:2 (id ""): field "meta.url" names more than one value (the object has both a key "meta.url" and that path into its nested objects; rename one first, with jq for one): which one is the document's is unclear`,
				`bad n.jsonl:3 (id ""): field "doc.body" names more than one value ("doc" appears more than once in the object): which one is the document's is unclear`,
				`n.jsonl:4 id=ok text="fine"`,
				`bad n.jsonl:5 (id ""): field "m" appears more than once in the object: which one is the document's is unclear`}},
		// Metadata that is not UTF-8, in a string or deeper, is a bad
		// record, as a text or an id is: it was stored, and export wrote
		// it back as JSON that is not UTF-8 (an input review, IN-2).
		{name: "metadata not UTF-8", files: map[string][]byte{"m.jsonl": []byte("{\"id\":\"a\",\"text\":\"t\",\"m\":\"caf\xe9\"}\n{\"id\":\"b\",\"text\":\"t\",\"m\":{\"k\":\"\xe9\"}}\n{\"id\":\"c\",\"text\":\"t\",\"m\":\"caf\u00e9 \xc3\xa9\"}\n")},
			paths: []string{"m.jsonl"}, o: Options{MetaField: "m"},
			want: []string{`bad m.jsonl:1 (id "a"): field "m" is not valid UTF-8 (byte 0xe9 at offset 3 of its string as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)`,
				`bad m.jsonl:2 (id "b"): field "m" is not valid UTF-8 (byte 0xe9 at offset 6 of its value as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)`,
				`m.jsonl:3 id=c text="t"`}},
		// A text with an escape of half a surrogate pair is a bad record,
		// as an id with one is: it was stored with U+FFFD in its place
		// (an input review, IN-3). A pair, an escaped backslash before
		// "ud800" and an escaped U+FFFD are text.
		{name: "lone surrogate texts", files: map[string][]byte{"s.jsonl": []byte(`{"id":"a","text":"bad \ud800 surrogate"}` + "\n" +
			`{"id":"b","text":"pair \ud83d\ude00"}` + "\n" + `{"id":"c","text":"not \\ud800 one"}` + "\n" + `{"id":"d","text":"\ufffd"}` + "\n")},
			paths: []string{"s.jsonl"},
			want: []string{`bad s.jsonl:1 (id "a"): field "text" has an escape that is not a character (a lone surrogate, \ud800 at offset 4 of its string as written): convert the text first, or escape U+FFFD (\ufffd) if that is what it means`,
				"s.jsonl:2 id=b text=\"pair \U0001f600\"", `s.jsonl:3 id=c text="not \\ud800 one"`, "s.jsonl:4 id=d text=\"\ufffd\""}},
		// CSV files joined with cat: the next file's header, and its byte
		// order mark, are bad rows, not documents (an input review,
		// IN-15). A row that ends in CR before its CRLF (line ends
		// converted twice) is bad, the header too, where the last column
		// kept the CR (IN-16); a quoted field's CR is the field's.
		{name: "csv joined files and doubled CRs", files: map[string][]byte{"j.csv": []byte("id,text\na,one\nid,text\nb,two\n\xef\xbb\xbfid,text\nc,three\n\"id\", text\n"),
			"r.csv": []byte("text,id\r\none,a\r\r\n\"two\r\",b\r\nthree,c\r\n")},
			paths: []string{"j.csv", "r.csv"},
			want: []string{"j.csv:2 id=a text=\"one\"", `bad j.csv:3 (id ""): the row repeats the header (files joined with cat? give each file as an input)`, "j.csv:4 id=b text=\"two\"",
				`bad j.csv:5 (id ""): the row starts with a byte order mark (U+FEFF), as a file joined to others with cat does: give each file as an input, or remove it (sed 's/^\xef\xbb\xbf//')`, "j.csv:6 id=c text=\"three\"",
				`bad j.csv:7 (id ""): the row repeats the header (files joined with cat? give each file as an input)`,
				`bad r.csv:2 (id ""): the line ends in a carriage return before its line end (CR CR LF: line ends converted twice?): remove it first (sed 's/\r*$//' FILE)`,
				"r.csv:3 id=b text=\"two\\r\"", "r.csv:4 id=c text=\"three\""}},
		{name: "csv header ending in CR CR LF", files: map[string][]byte{"h.csv": []byte("text,id\r\r\none,a\r\r\n")}, paths: []string{"h.csv"}},
		// A damaged compressed text file in a directory is a bad record
		// of its own (one document), passed over with the others' reading
		// going on: it stopped the run (an input review, IN-12).
		{name: "damaged gzip text in a directory", files: map[string][]byte{"g/app.log": []byte("plain log text"), "g/bad.gz": gzipBytes([]byte("rotated log text, cut short"))[:20], "g/z.txt": []byte("another text")},
			paths: []string{"g"},
			want:  []string{`g/app.log id=app.log text="plain log text"`, `bad g/bad.gz (id "bad.gz"): the gzip stream is damaged: the compressed stream ends early (truncated file?): unexpected EOF`, `g/z.txt id=z.txt text="another text"`}},
		// A JSON array, a pretty-printed object and a byte order mark
		// inside the file (files joined with cat) say what they are.
		{name: "malformed JSON lines", files: map[string][]byte{"bad.jsonl": []byte("{\"id\":\"a\"}\n[1]\nnot json\n{\"id\":\"b\",\"text\":null}\n{\"id\":\"c\",\"text\":\"ok\"}\n{\n\xef\xbb\xbf{\"id\":\"d\",\"text\":\"x, y\"}\n")},
			paths: []string{"bad.jsonl"},
			want: []string{`bad bad.jsonl:1 (id "a"): no "text" field (--text-field names the text's field)`,
				`bad bad.jsonl:2 (id ""): not a JSON object: the line starts with '[' (a JSON array? JSON Lines holds one object per line: jq -c '.[]' FILE writes them so)`,
				`bad bad.jsonl:3 (id ""): not a JSON object: the line starts with 'n', not { (plain text? --format text reads each file as one document)`,
				`bad bad.jsonl:4 (id "b"): field "text" is not a string`, `bad.jsonl:5 id=c text="ok"`,
				`bad bad.jsonl:6 (id ""): not a JSON object: unexpected end of JSON input (an object over several lines? JSON Lines holds one object per line: jq -c . FILE writes them so)`,
				`bad bad.jsonl:7 (id ""): not a JSON object: the line starts with a byte order mark (U+FEFF), as a file joined to others with cat does: remove it (sed 's/^\xef\xbb\xbf//')`}},
		// UTF-16 (PowerShell's >, Notepad's "Unicode"): said, where the
		// mark read as 'ÿ' with the CSV hint (a multilingual user's U8).
		// A file with the mark is one bad record, not read on (a
		// read-through's R19: the zero byte after its last line was a bad
		// record of its own); CSV and TSV too. One without the mark is
		// named line by line.
		{name: "UTF-16 read as JSON Lines", files: map[string][]byte{"w.jsonl": utf16LE("\ufeff{\"id\":\"a\",\"text\":\"x, y\"}\n{\"id\":\"b\",\"text\":\"z\"}\n"),
			"w.csv": utf16LE("\ufeffid,text\na,x\n"), "w.tsv": utf16BE("\ufeffid\ttext\na\tx\n"), "n.jsonl": utf16LE("{\"id\":\"a\",\"text\":\"x\"}\n"),
			"w32.jsonl": {0xff, 0xfe, 0, 0, '{', 0, 0, 0}},
			paths: []string{"w.jsonl", "w.csv", "w.tsv", "w32.jsonl", "n.jsonl"},
			want: []string{`bad w.jsonl (id ""): the file is UTF-16 (it starts with a UTF-16 byte order mark), not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)`,
				`bad w.csv (id ""): the file is UTF-16 (it starts with a UTF-16 byte order mark), not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)`,
				`bad w.tsv (id ""): the file is UTF-16 (it starts with a UTF-16 byte order mark), not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)`,
				`bad w32.jsonl (id ""): the file is UTF-32 (it starts with a UTF-32 byte order mark), not UTF-8: convert it first (iconv -f utf-32 -t utf-8 FILE)`,
				`bad n.jsonl:1 (id ""): not a JSON object: the file is UTF-16, not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)`,
				`bad n.jsonl:2 (id ""): not a JSON object: the file is UTF-16, not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)`}},
		{name: "CSV and TSV read as JSON Lines", files: map[string][]byte{"x.jsonl": []byte("id,text\n" + "a\tb\n" + "plain words\n")},
			paths: []string{"x.jsonl"},
			want: []string{`bad x.jsonl:1 (id ""): not a JSON object (CSV or TSV? give --format csv or tsv): invalid character 'i' looking for beginning of value`,
				`bad x.jsonl:2 (id ""): not a JSON object (CSV or TSV? give --format csv or tsv): invalid character 'a' looking for beginning of value`,
				`bad x.jsonl:3 (id ""): not a JSON object: the line starts with 'p', not { (plain text? --format text reads each file as one document)`}},
		{name: "over-long lines skipped", files: map[string][]byte{"l.jsonl": []byte(`{"id":"s","text":"short"}` + "\n" + `{"id":"long","text":"` + strings.Repeat("y", 200) + `"}` + "\n" + bigLine + `{"id":"t","text":"next"}`)},
			paths: []string{"l.jsonl"}, o: Options{MaxRecordBytes: 100},
			want: []string{`l.jsonl:1 id=s text="short"`, `bad l.jsonl:2 (id ""): longer than the record limit: 224 bytes (at most 100)`,
				fmt.Sprintf(`bad l.jsonl:3 (id ""): longer than the record limit: %d bytes (at most 100)`, len(bigLine)), `l.jsonl:4 id=t text="next"`}},
		{name: "csv bad rows", files: map[string][]byte{"r.csv": []byte("text,id\nx\n\"y,a\n")},
			paths: []string{"r.csv"},
			want:  []string{`bad r.csv:2 (id ""): 1 column, the header has 2 (a row cut short, or a line end in a field that is not quoted?)`, `bad r.csv:3 (id ""): a quoted field is not closed before the end of the input`}},
		{name: "csv rows that would lose text", files: map[string][]byte{"r.csv": []byte("id,text\na,one two\nb,five,six\nc,\"x\"y\nd,\"a \"\"quoted\"\" word\"\ne,5\" screen\n")},
			paths: []string{"r.csv"},
			want: []string{`r.csv:2 id=a text="one two"`, `bad r.csv:3 (id ""): 3 columns, the header has 2 (quote a field that holds ",")`,
				`bad r.csv:4 (id ""): field 2 has text after its closing quote (a quote inside a quoted field is written "")`,
				`r.csv:5 id=d text="a \"quoted\" word"`, `r.csv:6 id=e text="5\" screen"`}},
		{name: "csv text not UTF-8", files: map[string][]byte{"l.csv": []byte("id,text\nx1,r\xe9sum\xe9\nx2,r\xe8sum\xe8\nx3,caf\u00e9\n")},
			paths: []string{"l.csv"},
			want: []string{`bad l.csv:2 (id "x1"): field "text" is not valid UTF-8 (byte 0xe9 at offset 1 of its string as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)`,
				`bad l.csv:3 (id "x2"): field "text" is not valid UTF-8 (byte 0xe8 at offset 1 of its string as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)`,
				"l.csv:4 id=x3 text=\"caf\u00e9\""}},
		// A stray quote opens a field that runs to the end: reading stops
		// (skipping it as one bad record lost every row after it).
		{name: "tsv stray quote", files: map[string][]byte{"s.tsv": []byte("id\ttext\ns1\tgood\ns2\t\"stray quote\ns3\tgood too\ns4\tand this\n")},
			paths: []string{"s.tsv"}, wantErr: ErrUnclosedQuote},
		{name: "csv over-long record", files: map[string][]byte{"r.csv": []byte("id,text\na,\"" + strings.Repeat("z\n", 60) + "\"\nb,ok\n")},
			paths: []string{"r.csv"}, o: Options{MaxRecordBytes: 100},
			want: []string{`bad r.csv:2 (id ""): longer than the record limit: 125 bytes (at most 100)`, `r.csv:63 id=b text="ok"`}},
		{name: "csv header naming a column twice", files: map[string][]byte{"r.csv": []byte("id,text,id\na,one,b\n")},
			paths: []string{"r.csv"}, wantErr: nil},
		// An id column not read (ids from lines) may be named twice.
		{name: "csv header naming an unread column twice", files: map[string][]byte{"r.csv": []byte("id,text,id\na,one,b\n")},
			paths: []string{"r.csv"}, o: Options{IDFrom: "line"}, want: []string{`r.csv:2 id=r.csv:2 text="one"`}},
		{name: "csv without the columns", files: map[string][]byte{"r.csv": []byte("key,body\na,b\n")},
			paths: []string{"r.csv"}, wantErr: nil},
		// A text with a stray byte that is not UTF-8 is a bad record, as
		// in JSON Lines (it was stored with U+FFFD: Latin-1 texts that
		// differed in their accents alone became one, and export wrote
		// other bytes); one with a UTF-16 byte order mark is named so.
		{name: "directory: hidden skipped, binary reported", files: map[string][]byte{
			"d/a.txt": []byte("alpha"), "d/sub/b.txt": []byte("beta\n"), "d/.hidden": []byte("h"), "d/.git/config": []byte("g"),
			"d/sub/.cache/x.txt": []byte("c"), "d/prog.bin": []byte("\x7fELF\x00\x01"), "d/z.txt": []byte("zeta"),
			"d/latin1.txt": []byte("caf\xe9 cr\xe8me"), "d/stray.txt": []byte(strings.Repeat("ok text ", 20) + "\xff"),
			"d/u16.txt": []byte("\xff\xfea\x00b\x00")},
			paths: []string{"d"},
			want: []string{`d/a.txt id=a.txt text="alpha"`, `bad d/latin1.txt (id "latin1.txt"): ` + ErrBinary.Error(), `bad d/prog.bin (id "prog.bin"): ` + ErrBinary.Error(),
				`bad d/stray.txt (id "stray.txt"): not valid UTF-8 (byte 0xff at offset 160): text in another encoding, such as Latin-1? convert it first (iconv -f latin1 -t utf-8)`,
				`d/sub/b.txt id=sub/b.txt text="beta\n"`,
				`bad d/u16.txt (id "u16.txt"): ` + ErrBinary.Error() + `; it starts with a UTF-16 byte order mark: convert it first (iconv -f utf-16 -t utf-8)`,
				`d/z.txt id=z.txt text="zeta"`}},
		{name: "directory of jsonl shards", files: map[string][]byte{"s/1.jsonl": docsJSONL, "s/.x.jsonl": docsJSONL},
			paths: []string{"s"}, o: Options{Format: "jsonl"},
			want: []string{`s/1.jsonl:1 id=a text="alpha"`, `s/1.jsonl:2 id=b text="beta"`}},
		{name: "over-long text file", files: map[string][]byte{"t/a.txt": []byte(strings.Repeat("a", 101)), "t/b.txt": []byte("b")},
			paths: []string{"t"}, o: Options{MaxRecordBytes: 100},
			want: []string{`bad t/a.txt (id "a.txt"): longer than the record limit: more than 100 bytes`, `t/b.txt id=b.txt text="b"`}},
		{name: "missing file", paths: []string{"nope.jsonl"}, wantErr: fs.ErrNotExist},
		{name: "unknown format", paths: []string{"-"}, o: Options{Format: "arrow"}, wantErr: ErrUnknownFormat},
		{name: "bad id-from", paths: []string{"-"}, o: Options{IDFrom: "uuid"}, wantErr: ErrInvalidOptions},
		{name: "truncated gzip", files: map[string][]byte{"t.jsonl.gz": gzipBytes(bytes.Repeat(docsJSONL, 100))[:40]},
			paths: []string{"t.jsonl.gz"}, wantErr: ErrTruncated},
		// NB: an empty file named as compressed (a job that died before
		// it wrote) was read as an empty input (a nightly review, N3);
		// an empty plain file is one.
		{name: "empty gzip", files: map[string][]byte{"e.jsonl.gz": nil}, paths: []string{"e.jsonl.gz"}, wantErr: ErrTruncated, wantText: "the file is empty"},
		{name: "empty zstd", files: map[string][]byte{"e.jsonl.ZST": nil}, paths: []string{"e.jsonl.ZST"}, wantErr: ErrTruncated},
		{name: "empty plain", files: map[string][]byte{"e.jsonl": nil}, paths: []string{"e.jsonl"}},
		{name: "truncated zstd", files: map[string][]byte{"t.jsonl.zst": zstdBytes(bytes.Repeat(docsJSONL, 100))[:30]},
			paths: []string{"t.jsonl.zst"}, wantErr: io.ErrUnexpectedEOF},
		// Bytes after the frame: the decoder's error says it is zstd's
		// ("invalid input: magic number mismatch" named no format).
		{name: "zstd then junk", files: map[string][]byte{"j.jsonl.zst": append(zstdBytes(docsJSONL), "junk after the frame"...)},
			paths: []string{"j.jsonl.zst"}, wantErr: zstd.ErrMagicMismatch, wantText: "zstd: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range c.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := collect(t, dir, c.paths, c.stdin, c.o)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want one matching %v", err, c.wantErr)
				}
				if len(c.paths) > 0 && c.paths[0] != "-" && !strings.Contains(err.Error(), c.paths[0]) {
					t.Fatalf("error %q does not name %s", err, c.paths[0])
				}
				if !strings.Contains(err.Error(), c.wantText) {
					t.Fatalf("error %q does not say %q", err, c.wantText)
				}
				return
			}
			if c.name == "csv header naming a column twice" {
				if err == nil || !strings.Contains(err.Error(), `r.csv:1: the header names "id" twice (columns 1 and 3)`) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if c.name == "csv header ending in CR CR LF" {
				if err == nil || !strings.Contains(err.Error(), `h.csv:1: the header: the line ends in a carriage return before its line end (CR CR LF: line ends converted twice?)`) || len(got) > 0 {
					t.Fatalf("error %v after %q", err, got)
				}
				return
			}
			if c.name == "csv without the columns" {
				if err == nil || !strings.Contains(err.Error(), `r.csv:1: the header "key,body" has no "id" column for the ids (--id-col names it; --id-from line or hash makes ids) and no "text" column for the texts (--text-col names it)`) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("fatal error %v after %q", err, got)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// Ensure that an over-long line inside a small gzip file is skipped
// without being held: reading a 64 MiB line with a 1 MiB cap allocates
// about the cap, not the line (ReadBytes would allocate over 64 MiB), and
// the record after it is read.
func TestLongLineMemory(t *testing.T) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write([]byte(`{"id":"bomb","text":"`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 64 {
		w.Write(chunk)
	}
	w.Write([]byte("\"}\n{\"id\":\"after\",\"text\":\"ok\"}\n"))
	w.Close()
	path := filepath.Join(t.TempDir(), "bomb.jsonl.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got []string
	for rec, err := range Read(context.Background(), []string{path}, nil, Options{MaxRecordBytes: limit}) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			got = append(got, "bad "+re.Pos())
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, rec.ID)
		}
	}
	runtime.ReadMemStats(&after)
	if want := "bad " + path + ":1 after"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*limit+2<<20 {
		t.Fatalf("reading allocated %d bytes for a %d-byte cap", alloc, limit)
	}
}

// Ensure that a loop that breaks stops the reading (no yield after it,
// which would panic), and that a cancelled context ends it with an error
// wrapping context.Canceled that names the position.
func TestReadStops(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	os.WriteFile(path, []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"y\"}\n{\"id\":\"c\",\"text\":\"z\"}\n"), 0o644)
	n := 0
	for range Read(context.Background(), []string{path, path}, nil, Options{}) {
		n++
		if n == 2 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ids []string
	var last error
	for rec, err := range Read(ctx, []string{path}, nil, Options{}) {
		if err != nil {
			last = err
			continue
		}
		ids = append(ids, rec.ID)
		cancel()
	}
	if strings.Join(ids, ",") != "a" || !errors.Is(last, context.Canceled) || !strings.Contains(last.Error(), "d.jsonl:2") {
		t.Fatalf("after cancelling at a: ids %v, error %v", ids, last)
	}
}

// endless is an input that never ends: it yields x's forever (a line
// that never ends; with line, lines of "x"), and calls at once it has
// yielded after bytes (1 MiB when 0). NB: it counts atomically: a reader
// reads on a goroutine of its own, which may be in a read when the
// test looks.
type endless struct {
	n     atomic.Int64
	at    func()
	after int64
	line  bool
	once  sync.Once
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
		if e.line && i%2 == 1 {
			p[i] = '\n'
		}
	}
	if n := e.n.Add(int64(len(p))); n >= cmp.Or(e.after, 1<<20) && e.at != nil {
		e.once.Do(e.at)
	}
	return len(p), nil
}

// readUntilEnd reads in under ctx and returns the last error, or fails the
// test if the reading has not ended a minute after ctx did (a hang).
func readUntilEnd(t *testing.T, ctx context.Context, paths []string, in io.Reader, o Options) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var last error
		for _, err := range Read(ctx, paths, in, o) {
			if err != nil {
				last = err
			}
		}
		done <- last
	}()
	<-ctx.Done()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the reading went on after its context ended")
		return nil
	}
}

// Ensure that a context that ends stops the reading of an input that
// gives nothing to yield: a line that never ends (/dev/zero, a producer
// that writes no newline), in JSON Lines and CSV, or a pipe that stays
// open and silent. Each held a command through its first signal (an
// adversarial review's A1, A2): the reader read the line on, or waited in
// its first read, without looking at the context.
func TestReadStopsOnAnInputThatGivesNothing(t *testing.T) {
	for _, format := range []string{"jsonl", "csv"} {
		ctx, cancel := context.WithCancel(context.Background())
		err := readUntilEnd(t, ctx, nil, &endless{at: cancel}, Options{Format: format, MaxRecordBytes: 4096})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s, an endless line: %v, want context.Canceled", format, err)
		}
	}
	// A CSV quote never closed, over endless short lines (a read-through's
	// R4: no line is long, and the record goes on forever).
	ctx, cancel := context.WithCancel(context.Background())
	quoted := io.MultiReader(strings.NewReader("id,text\n1,\""), &endless{at: cancel, line: true})
	if err := readUntilEnd(t, ctx, nil, quoted, Options{Format: "csv"}); !errors.Is(err, context.Canceled) {
		t.Errorf("csv, a quote never closed: %v, want context.Canceled", err)
	}
	// A pipe that wrote a record, then stays open and silent, in the
	// formats read on the caller's goroutine (a read-through's R4).
	for _, format := range []string{"csv", "text"} {
		pr, pw := io.Pipe()
		defer pw.Close()
		go pw.Write([]byte("id,text\n1,a first record\n"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var last error
			for rec, err := range Read(ctx, nil, pr, Options{Format: format, MaxRecordBytes: 1 << 20}) {
				if err != nil {
					last = err
				} else if rec.ID == "1" {
					cancel()
				}
			}
			done <- last
		}()
		if format == "text" {
			// NB: a text is one record, read to its end: nothing is
			// yielded before the silence.
			time.Sleep(10 * time.Millisecond)
			cancel()
		}
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s, a pipe silent after a record: %v, want context.Canceled", format, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: the reading went on after its context ended", format)
		}
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := readUntilEnd(t, ctx, nil, pr, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a silent pipe: %v, want context.Canceled", err)
	}
}

// Ensure that a text file cut inside its gzip stream is a bad record
// naming it (ErrBadRecord and ErrTruncated), not a shorter document; a
// bad record, not the reading's end, since the file is one document (an
// input review, IN-12).
func TestTruncatedText(t *testing.T) {
	dir := t.TempDir()
	gz := gzipBytes(bytes.Repeat([]byte("some text that compresses "), 10000))
	path := filepath.Join(dir, "notes.txt.gz")
	os.WriteFile(path, gz[:len(gz)/2], 0o644)
	var bad []error
	for rec, err := range Read(context.Background(), []string{path}, nil, Options{}) {
		if err == nil {
			t.Fatalf("a document of %d bytes read from a cut stream", len(rec.Text))
		}
		bad = append(bad, err)
	}
	if len(bad) != 1 || !errors.Is(bad[0], ErrBadRecord) || !errors.Is(bad[0], ErrTruncated) || !strings.Contains(bad[0].Error(), path) {
		t.Fatalf("errors %v, want one bad record of %s, truncated", bad, path)
	}
}

// Ensure that an input compressed in a format lshdb does not read (files
// made by xz, bzip2, lz4 and zip, in testdata/compressed) is refused with
// ErrUnsupportedCompression, naming the file and its format, whatever the
// format asked; and that a text starting as a bzip2 header does ("BZh9"
// without the block magic) is read as text. Such a file was read as
// JSON Lines and failed as "not a JSON object", naming a byte of the
// compressed stream.
func TestUnsupportedCompression(t *testing.T) {
	dir := filepath.Join("testdata", "compressed")
	for _, c := range []struct{ file, format string }{
		{"one.jsonl.xz", "xz"}, {"one.jsonl.bz2", "bzip2"}, {"one.jsonl.lz4", "lz4"}, {"one.jsonl.zip", "zip"},
	} {
		for _, f := range []string{"", "csv", "text"} {
			got, err := collect(t, dir, []string{c.file}, "", Options{Format: f})
			if !errors.Is(err, ErrUnsupportedCompression) || !strings.Contains(err.Error(), c.file+" is "+c.format+"-compressed") || len(got) != 0 {
				t.Errorf("%s as %q: records %q, error %v", c.file, f, got, err)
			}
		}
		// The same bytes on stdin.
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := collect(t, dir, []string{"-"}, string(b), Options{}); !errors.Is(err, ErrUnsupportedCompression) || len(got) != 0 {
			t.Errorf("%s on stdin: records %q, error %v", c.file, got, err)
		}
	}
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "bz.txt"), []byte("BZh9 starts a bzip2 file, then 1AY&SY\n"), 0o644)
	got, err := collect(t, tmp, []string{"bz.txt"}, "", Options{Format: "text"})
	if err != nil || len(got) != 1 || !strings.Contains(got[0], "BZh9 starts") {
		t.Errorf("a text that starts like bzip2: records %q, error %v", got, err)
	}
}

// Ensure that Record.Raw is the record as read (a CSV record's lines
// joined with their own line ends, without the final line end) and Record.Meta the raw JSON
// of the meta field, nil when the record has none.
func TestRawAndMeta(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.jsonl"), []byte("{\"id\":\"a\",\"text\":\"x\",\"m\":{\"k\": [1, 2]}}\r\n{\"id\":\"b\",\"text\":\"y\"}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "r.csv"), []byte("id,text\r\nc,\"two\r\nlines\"\r\n"), 0o644)
	var got []string
	for rec, err := range Read(context.Background(), []string{filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "r.csv")}, nil, Options{MetaField: "m"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s raw=%q end=%q text=%q meta=%q nil=%v", rec.ID, rec.Raw, rec.End, rec.Text, rec.Meta, rec.Meta == nil))
	}
	want := []string{
		`a raw="{\"id\":\"a\",\"text\":\"x\",\"m\":{\"k\": [1, 2]}}" end="\r\n" text="x" meta="{\"k\": [1, 2]}" nil=false`,
		`b raw="{\"id\":\"b\",\"text\":\"y\"}" end="\n" text="y" meta="" nil=true`,
		`c raw="c,\"two\r\nlines\"" end="\r\n" text="two\nlines" meta="" nil=true`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Ensure that an input can be written back byte for byte from what Read
// says of it: for JSON Lines and CSV/TSV (LF, CRLF, a last line without
// its end, quoted fields over lines, bad records, compressed or not), the
// CSV header and its line end, then each record's (or bad record's) Raw
// and End, are the file's bytes. The oracle is the file itself. Blank
// lines are not records, so the inputs have none.
func TestSourceAndEndsRebuildInput(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string][]byte{
		"lf.jsonl":   []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"y\"}\n"),
		"crlf.jsonl": []byte("{\"id\":\"a\",\"text\":\"x\"}\r\nnot json\r\n{\"id\":\"c\", \"text\":\"z\"}"),
		"mixed.csv":  []byte("id,text,extra\r\n1,\"a,\r\nb\",e\n2,plain,\"\"\"q\"\"\"\r\n3,too,many,fields\n4,last,x"),
		"tabs.tsv":   []byte("text\tid\nhello\t1\n\"two\nlines\"\t2\n"),
		"z.jsonl.gz": gzipBytes([]byte("{\"id\":\"g\",\"text\":\"gz\"}\r\n")),
		"z.csv.zst":  zstdBytes([]byte("id,text\n5,zst\n")),
		// NB: a lone CR at the input's very end is its last line's end.
		"cr.csv":   []byte("id,text\n1,a\rb\n2,\"q\"\r"),
		"cr.jsonl": []byte("{\"id\":\"a\",\"text\":\"x\"}\r"),
	}
	// NB: a BGZF CSV over several members, named as bgzip names it.
	var bigCSV bytes.Buffer
	bigCSV.WriteString("id,text\r\n")
	for i := 0; bigCSV.Len() < 3*bgzfMaxInput; i++ {
		fmt.Fprintf(&bigCSV, "%d,\"row %d, quoted\"\r\n", i, i)
	}
	inputs["big.csv.bgz"] = bgzfBytes(t, bigCSV.Bytes(), 1<<20)
	for name, b := range inputs {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	plain := map[string][]byte{"big.csv.bgz": bigCSV.Bytes()}
	for name, b := range inputs {
		if plain[name] == nil {
			plain[name] = b
		}
	}
	plain["z.jsonl.gz"] = []byte("{\"id\":\"g\",\"text\":\"gz\"}\r\n")
	plain["z.csv.zst"] = []byte("id,text\n5,zst\n")
	wantComp := map[string]string{"z.jsonl.gz": "gzip", "z.csv.zst": "zstd", "big.csv.bgz": "gzip"}
	for name := range inputs {
		var got bytes.Buffer
		var srcs []Source
		o := Options{OnSource: func(s Source) error {
			srcs = append(srcs, s)
			got.Write(s.Header)
			got.WriteString(s.HeaderEnd)
			return nil
		}}
		for rec, err := range Read(context.Background(), []string{filepath.Join(dir, name)}, nil, o) {
			var re *RecordError
			switch {
			case errors.As(err, &re):
				got.Write(re.Raw)
				got.WriteString(re.End)
			case err != nil:
				t.Fatalf("%s: %v", name, err)
			default:
				got.Write(rec.Raw)
				got.WriteString(rec.End)
			}
		}
		if !bytes.Equal(got.Bytes(), plain[name]) {
			t.Errorf("%s: rebuilt\n%q\nwant\n%q", name, got.Bytes(), plain[name])
		}
		format := formatByName(name)
		if name == "big.csv.bgz" && format != "csv" {
			t.Errorf("%s: format %s by name, want csv", name, format)
		}
		if len(srcs) != 1 || srcs[0].Format != format || srcs[0].Compression != wantComp[name] || srcs[0].Name != filepath.Join(dir, name) {
			t.Errorf("%s: sources %+v, want one of format %s, compression %q", name, srcs, format, wantComp[name])
		}
	}
}

// Ensure that an error returned by OnSource ends the reading with it,
// before the input's first record.
func TestOnSourceError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.csv"), []byte("id,text\n1,x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte("{\"id\":\"2\",\"text\":\"y\"}\n"), 0o644)
	stop := errors.New("mixed formats")
	for _, name := range []string{"a.csv", "b.jsonl"} {
		n := 0
		var last error
		for _, err := range Read(context.Background(), []string{filepath.Join(dir, name)}, nil, Options{OnSource: func(Source) error { return stop }}) {
			if err == nil {
				n++
			}
			last = err
		}
		if n != 0 || !errors.Is(last, stop) {
			t.Errorf("%s: %d records, last error %v; want none and %v", name, n, last, stop)
		}
	}
}

// Ensure that SkipText yields the same records and bad records as without
// it (the oracle: a read without it), with every text empty.
func TestSkipTextSameRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	// NB: e's text is Latin-1, not UTF-8: filter (SkipText) took it for a
	// record of a stored document (its id's), which the build had refused.
	os.WriteFile(path, []byte("{\"id\":\"a\",\"text\":\"x\\u00e9\"}\n{\"id\":\"b\",\"text\":5}\n{\"id\":\"c\"}\n{\"id\":\"d\",\"text\":\"\"}\nnope\n{\"id\":\"e\",\"text\":\"caf\xe9\"}\n"), 0o644)
	read := func(o Options) (ids []string, bad []string) {
		for rec, err := range Read(context.Background(), []string{path}, nil, o) {
			var re *RecordError
			switch {
			case errors.As(err, &re):
				bad = append(bad, re.Error())
			case err != nil:
				t.Fatal(err)
			default:
				if o.SkipText && rec.Text != "" {
					t.Errorf("%s: text %q with SkipText", rec.ID, rec.Text)
				}
				ids = append(ids, rec.ID+":"+string(rec.Raw))
			}
		}
		return ids, bad
	}
	ids, bad := read(Options{})
	ids2, bad2 := read(Options{SkipText: true})
	if fmt.Sprint(ids) != fmt.Sprint(ids2) || fmt.Sprint(bad) != fmt.Sprint(bad2) || len(ids) != 2 || len(bad) != 4 {
		t.Fatalf("without SkipText %q %q, with it %q %q", ids, bad, ids2, bad2)
	}
}

// Ensure that IsRecordName tells record files by name, compressed or not,
// from a directory's ordinary files (the names worked by hand).
func TestIsRecordName(t *testing.T) {
	for name, want := range map[string]bool{
		"night.jsonl": true, "NIGHT.JSONL.GZ": true, "a.ndjson.zst": true, "rows.csv": true, "rows.tsv.bgz": true,
		"t.parquet": true, "notes.txt": false, "README": false, "data.json": false, "a.gz": false, "x.jsonl.bak": false,
	} {
		if got := IsRecordName(name); got != want {
			t.Errorf("IsRecordName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Ensure that a directory's symbolic links to files are read as the files
// (their ids the links' paths), and that links to directories or to
// nothing are bad records of ErrNotRegular: all were skipped without a
// word, and a tree of links built an empty index.
func TestDirLinks(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"d/a.txt": "alpha", "d/sub/b.txt": "beta", "elsewhere/c.txt": "gamma"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"d/la.txt": "a.txt", "d/lc.txt": "../elsewhere/c.txt", "d/ldir": "sub", "d/lnone": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	got, err := collect(t, dir, []string{"d"}, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`d/a.txt id=a.txt text="alpha"`, `d/la.txt id=la.txt text="alpha"`, `d/lc.txt id=lc.txt text="gamma"`,
		`bad d/ldir (id ""): not a regular file: a symbolic link to a directory, not followed (links can loop): give the directory itself as an input`,
		`d/sub/b.txt id=sub/b.txt text="beta"`}
	if len(got) != len(want)+1 || !strings.HasPrefix(got[4], `bad d/lnone (id ""): not a regular file: a symbolic link to nothing readable`) {
		t.Fatalf("got\n%s", strings.Join(got, "\n"))
	}
	got = slices.Delete(got, 4, 5)
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A link given as the input (a nightly job's "current") is the
	// directory it names: it was passed over, every document with it.
	if err := os.Symlink("elsewhere", filepath.Join(dir, "current")); err != nil {
		t.Fatal(err)
	}
	got, err = collect(t, dir, []string{"current"}, "", Options{})
	if err != nil || !slices.Equal(got, []string{`current/c.txt id=c.txt text="gamma"`}) {
		t.Errorf("a link given as the input: %v\n%s", err, strings.Join(got, "\n"))
	}
}

// Ensure that CheckPaths names the input it cannot stat, and that the
// cause stays testable with errors.Is.
func TestCheckPathsNamesTheInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckPaths([]string{"-", file, dir}); err != nil {
		t.Fatalf("existing inputs: %v", err)
	}
	missing := filepath.Join(dir, "b.jsonl")
	err := CheckPaths([]string{file, missing, filepath.Join(dir, "c")})
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != "input "+missing+": no such file or directory" {
		t.Fatalf("a missing input: %v", err)
	}
}

// Ensure that QuoteID cuts a long id at a character's start, never inside
// one (a valid CJK id was shown with a stray byte, as if damaged: a
// multilingual user's U3). The oracle: the quoted prefix unquoted is the
// longest prefix of whole characters within 64 bytes, and says the length.
func TestQuoteID(t *testing.T) {
	for _, c := range []struct{ id, prefix string }{
		{strings.Repeat("a", 100), strings.Repeat("a", 64)},
		{strings.Repeat("旗", 23), strings.Repeat("旗", 21)}, // 69 bytes: 21 whole ones are 63
		{"x" + strings.Repeat("旗", 23), "x" + strings.Repeat("旗", 21)},
		{"xy" + strings.Repeat("旗", 23), "xy" + strings.Repeat("旗", 20)},
		{"xyz" + strings.Repeat("旗", 23), "xyz" + strings.Repeat("旗", 20)},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
	} {
		got := QuoteID(c.id)
		q, rest, cut := strings.Cut(got, "…")
		p, err := strconv.Unquote(q)
		switch {
		case err != nil:
			t.Errorf("QuoteID of %d bytes: %q does not unquote: %v", len(c.id), got, err)
		case len(c.id) > 64 && (!cut || rest != fmt.Sprintf(" (%d bytes)", len(c.id))):
			t.Errorf("QuoteID of %d bytes: %q does not say its length", len(c.id), got)
		case p != c.prefix || !utf8.ValidString(p):
			t.Errorf("QuoteID of %d bytes: %q, want the prefix %q", len(c.id), got, c.prefix)
		}
	}
}

// utf16BE is s in UTF-16, big-endian.
func utf16BE(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

// utf16LE is s in UTF-16, little-endian.
func utf16LE(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

// Ensure that with LongStops a line that passes the record limit ends the
// reading at once, naming its file and line, after the records before it:
// without it, an input with no line end (/dev/zero) was read for ever by
// a command bound to fail at the first bad record (a bad-input review,
// B3). Oracle: the bytes taken from an endless input, bounded by the
// limit and a read buffer; the context, cancelled after 64 MiB, turns a
// reader that reads on into a failure rather than a hang.
func TestLongStops(t *testing.T) {
	for _, c := range []struct {
		name, format, head string
		lines              bool   // endless short lines after head, not one endless line
		at                 string // where the error says the record starts
	}{
		{"jsonl", "jsonl", `{"id":"a","text":"a first record"}` + "\n", false, ":2:"},
		{"csv", "csv", "id,text\na,a first record\n", false, ":3:"},
		// NB: a CSV quote never closed, over endless short lines: each
		// line is short, and the record passes the limit (a
		// read-through's R3).
		{"csv, a quote never closed", "csv", "id,text\na,a first record\nb,\"", true, ":3:"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		tail := &endless{at: cancel, after: 64 << 20, line: c.lines}
		var ids []string
		var last error
		for rec, err := range Read(ctx, nil, io.MultiReader(strings.NewReader(c.head), tail), Options{Format: c.format, MaxRecordBytes: 4096, LongStops: true}) {
			if err != nil {
				last = err
				break
			}
			ids = append(ids, rec.ID)
		}
		cancel()
		if !errors.Is(last, ErrTooLong) || !strings.Contains(last.Error(), c.at) {
			t.Errorf("%s: %v, want a record too long, at %s", c.name, last, c.at)
		}
		if !slices.Equal(ids, []string{"a"}) {
			t.Errorf("%s: yielded %q before it, want the first record", c.name, ids)
		}
		if n := tail.n.Load(); n > 8<<20 {
			t.Errorf("%s: read %d bytes of the endless input, with a limit of 4096", c.name, n)
		}
	}
}

// Ensure that a CSV header without the columns is shown cut to 200 bytes
// (whole UTF-8 characters), and that a line of JSON read as CSV says so:
// a JSON Lines file given --format csv had its whole first line quoted,
// with no hint (a bad-input review, B13).
func TestCSVHeaderOfJSONLines(t *testing.T) {
	read := func(in string) error {
		var last error
		for _, err := range Read(context.Background(), nil, strings.NewReader(in), Options{Format: "csv"}) {
			if err != nil {
				last = err
			}
		}
		if last == nil || !strings.Contains(last.Error(), "a JSON Lines file? --format jsonl reads it") {
			t.Fatalf("%q: %v, want the JSON Lines hint", in[:20], last)
		}
		return last
	}
	read(`{"id":"a","text":"a text"}` + "\n") // NB: a quote error, not a header without the columns
	last := read(`{"id": "a", "text": "` + strings.Repeat("é", 300) + `"}` + "\n")
	_, quoted, _ := strings.Cut(last.Error(), "the header ")
	q, _, _ := strings.Cut(quoted, " has ")
	shown, err := strconv.Unquote(q)
	if err != nil || !utf8.ValidString(shown) || len(shown) > 200+len("…") || !strings.HasSuffix(shown, "…") {
		t.Errorf("the header shown: %q (%v), want at most 200 bytes of whole characters and …", q, err)
	}
}

// Ensure that a tar archive, plain, gzip- or zstd-compressed, from a file
// or a pipe, is refused as one, naming the tar command that extracts it,
// with ErrArchive and no record read: read as JSON Lines, each member's
// first line ran into the tar header before it, and --skip-bad loaded the
// rest (an input review, IN-6). JSON Lines files that hold "ustar" at
// offset 257 (a "custard": a read-through's RT10-5) or further on are
// read.
func TestTarRefused(t *testing.T) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, m := range []string{"p1.jsonl", "p2.jsonl"} {
		body := []byte(`{"id":"` + m + `","text":"a text"}` + "\n")
		tw.WriteHeader(&tar.Header{Name: m, Mode: 0o644, Size: int64(len(body))})
		tw.Write(body)
	}
	tw.Close()
	var zb bytes.Buffer
	zw, _ := zstd.NewWriter(&zb)
	zw.Write(tb.Bytes())
	zw.Close()
	dir := t.TempDir()
	files := map[string][]byte{"a.tar": tb.Bytes(), "a.tar.gz": gzipBytes(tb.Bytes()), "a.tzst": zb.Bytes(),
		"ok.jsonl":      []byte(`{"id":"x","text":"` + strings.Repeat("p", 300) + ` ustar"}` + "\n"),
		"custard.jsonl": []byte(`{"id":"x","text":"` + strings.Repeat("p", 257-len(`{"id":"x","text":"`)-1) + `custard pudding and more text after it"}` + "\n")}
	for name, b := range files {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	for name, want := range map[string]string{"a.tar": "is a tar archive", "a.tar.gz": "is a gzip-compressed tar archive", "a.tzst": "is a zstd-compressed tar archive"} {
		got, err := collect(t, dir, []string{name}, "", Options{})
		if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), name+" "+want) || !strings.Contains(err.Error(), "extract it first: tar ") || len(got) > 0 {
			t.Fatalf("%s: %q, error %v", name, got, err)
		}
		// From a pipe, as stdin.
		got, err = collect(t, dir, []string{"-"}, string(files[name]), Options{})
		if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), "stdin "+want) || len(got) > 0 {
			t.Fatalf("%s on stdin: %q, error %v", name, got, err)
		}
	}
	for _, name := range []string{"ok.jsonl", "custard.jsonl"} {
		if got, err := collect(t, dir, []string{name}, "", Options{}); err != nil || len(got) != 1 {
			t.Fatalf("%s: %q, %v", name, got, err)
		}
	}
	if b := files["custard.jsonl"]; string(b[257:262]) != "ustar" {
		t.Fatalf("the custard is not at 257: %q", b[250:270])
	}
	// Trickled into a pipe, its first 100 bytes alone at first: it was
	// read as JSON Lines (a read-through, RT10-7). A short record
	// trickled in the same way, and records after it, are still read as
	// each line ends: the reader gives the first before the second is
	// written.
	trickle := func(parts ...string) (io.Reader, func()) {
		pr, pw := io.Pipe()
		next := make(chan bool)
		go func() {
			for i, p := range parts {
				if i > 0 {
					if !<-next {
						break
					}
				}
				pw.Write([]byte(p))
			}
			pw.Close()
		}()
		return pr, func() { next <- true }
	}
	in, more := trickle(string(tb.Bytes()[:100]), string(tb.Bytes()[100:]))
	go func() { time.Sleep(50 * time.Millisecond); more() }()
	for rec, err := range Read(context.Background(), []string{"-"}, in, Options{}) {
		if !errors.Is(err, ErrArchive) {
			t.Fatalf("a tar trickled into a pipe: %+v, %v", rec, err)
		}
	}
	first := `{"id":"a","text":"short"}` + "\n"
	in, more = trickle(first[:10], first[10:], `{"id":"b","text":"second"}`+"\n")
	go func() { time.Sleep(50 * time.Millisecond); more() }()
	var ids []string
	for rec, err := range Read(context.Background(), []string{"-"}, in, Options{}) {
		if err != nil {
			t.Fatalf("records trickled into a pipe: %v", err)
		}
		if ids = append(ids, rec.ID); len(ids) == 1 {
			more() // NB: the second is written only once the first is read
		}
	}
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("records trickled into a pipe: %q", ids)
	}
}

// Ensure that a header that names neither column says what the file looks
// like: a TSV named .csv, a CSV read as TSV, semicolons (an input review's
// IN-9: each said only that the columns were missing).
func TestHeaderHints(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"tabs.csv":   {"id\ttext\na\tb\n", "(the header holds tabs: a TSV file? --format tsv reads it)"},
		"commas.tsv": {"id,text\na,b\n", "(the header holds commas: a CSV file? --format csv reads it)"},
		"semi.csv":   {"id;text\na;b\n", "(the header holds semicolons: lshdb reads CSV separated by commas, or TSV; convert the file first)"},
		"plain.csv":  {"key,body\na,b\n", `has no "id" column for the ids (--id-col names it; --id-from line or hash makes ids) and no "text" column for the texts (--text-col names it)`},
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(c.body), 0o644)
		_, err := collect(t, dir, []string{name}, "", Options{})
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to end %q", name, err, c.want)
		}
	}
}
