package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixture builds an index of testdata/cmd/inputs/docs.jsonl (texts stored)
// in a temporary directory and returns its path.
func fixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "index")
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "--store-text", "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
	return dir
}

// jsonLines parses out as JSON Lines, failing on anything else.
func jsonLines(t *testing.T, what, out string) []any {
	t.Helper()
	var vs []any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: not a JSON line: %q: %v", what, line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// badKeys returns the keys of v, at any depth, that are not snake_case.
func badKeys(v any, path string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !snakeCase.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			bad = append(bad, badKeys(x, path+"."+k)...)
		}
	case []any:
		for i, x := range v {
			bad = append(bad, badKeys(x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return bad
}

// Ensure that every command's JSON output is JSON Lines whose keys, at
// every depth, are snake_case.
func TestJSONKeysSnakeCase(t *testing.T) {
	dir := fixture(t)
	in := "../../testdata/cmd/inputs/docs.jsonl"
	// A bucket that exists, for the bucket command.
	out, errOut, code := runLine([]string{"buckets", "--db", dir, "--band", "0", "--top", "1", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("buckets: %d %s", code, errOut)
	}
	var bs bucketStatsJSON
	if err := json.Unmarshal([]byte(out), &bs); err != nil || len(bs.Hottest) != 1 {
		t.Fatalf("buckets output %q: %v", out, err)
	}
	tmp := t.TempDir()
	cmds := [][]string{
		{"create", "--db", filepath.Join(tmp, "created")},
		{"insert", "--db", filepath.Join(tmp, "inserted"), in},
		{"build", "--db", filepath.Join(tmp, "built"), in},
		{"dedup", "--db", filepath.Join(tmp, "built"), in},
		{"get", "--db", dir, "fox1"},
		{"query", "--db", dir, "--id", "fox1"},
		{"query", "--db", dir, "--id", "fox1", "--estimate-only", "--threshold", "0.5"},
		{"pairs", "--db", dir},
		{"pairs", "--db", dir, "--threshold", "0.5"},
		{"pairs", "--db", dir, "--sort=false"},
		{"clusters", "--db", dir, "--threshold", "0.5"},
		{"info", "--db", dir},
		{"stats", "--db", dir},
		{"buckets", "--db", dir, "--top", "3"},
		{"bucket", "--db", dir, "0", bs.Hottest[0].Bucket},
		{"explain", "--db", dir, "h", "x"},
		{"tune"},
		{"tune", "--db", dir},
		{"check", "--db", dir},
		{"version"},
		{"bench", "--build", "--corpus", in},
		{"purge", "--db", dir},
		{"delete", "--db", dir, "fox2"},
	}
	for _, args := range cmds {
		out, errOut, code := runLine(append(args, "--output", "json"), "")
		what := strings.Join(args, " ")
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", what, code, out, errOut)
		}
		for _, v := range jsonLines(t, what, out) {
			if bad := badKeys(v, ""); len(bad) > 0 {
				t.Errorf("%s: keys not snake_case: %v", what, bad)
			}
		}
	}
}

// Ensure that buckets prints bucket ids (text and JSON) in the form bucket
// takes back: every hottest bucket of every band, fed to bucket, lists
// exactly the members buckets sampled (all of them: no bucket here has
// more than SampleSize members).
func TestBucketsRoundTrip(t *testing.T) {
	dir := fixture(t)
	out, errOut, code := runLine([]string{"buckets", "--db", dir, "--top", "100", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("buckets: %d %s", code, errOut)
	}
	var bs bucketStatsJSON
	if err := json.Unmarshal([]byte(out), &bs); err != nil {
		t.Fatal(err)
	}
	// 6 documents, h and H identical: 5 distinct signatures in 16 bands,
	// so at least 16 and at most 80 lists; the histogram counts them all,
	// and the hottest name them all (each entry its other bands' lists
	// of the same members in also).
	total, named := 0, 0
	for _, n := range bs.Histogram {
		total += n
	}
	for _, h := range bs.Hottest {
		named += 1 + len(h.Also)
	}
	if named < 16 || total != named {
		t.Fatalf("%d hottest buckets naming %d lists, histogram %v", len(bs.Hottest), named, bs.Histogram)
	}
	text, _, _ := runLine([]string{"buckets", "--db", dir, "--top", "100"}, "")
	for _, h := range bs.Hottest {
		if len(h.Bucket) != 8 {
			t.Fatalf("bucket %q is not 8 hex digits", h.Bucket)
		}
		if !strings.Contains(text, fmt.Sprintf("  %d  %s  ", h.Band, h.Bucket)) && !strings.Contains(text, " "+h.Bucket+" ") {
			t.Fatalf("the table does not show bucket %s:\n%s", h.Bucket, text)
		}
		out, errOut, code := runLine([]string{"bucket", "--db", dir, "--output", "json", fmt.Sprint(h.Band), h.Bucket}, "")
		if code != 0 {
			t.Fatalf("bucket %d %s: %d %s", h.Band, h.Bucket, code, errOut)
		}
		var ids []string
		for _, v := range jsonLines(t, "bucket", out) {
			ids = append(ids, v.(map[string]any)["id"].(string))
		}
		if len(ids) != h.Size || !slices.Equal(ids, h.Sample) {
			t.Fatalf("bucket %d %s: members %v, buckets said size %d sample %v", h.Band, h.Bucket, ids, h.Size, h.Sample)
		}
		// The other bands' lists: their buckets too in bucket's form.
		for _, o := range h.Also {
			out, errOut, code := runLine([]string{"bucket", "--db", dir, fmt.Sprint(o.Band), o.Bucket}, "")
			if code != 0 || strings.TrimSpace(out) == "" {
				t.Fatalf("bucket %d %s (also of %d %s): %d %q %s", o.Band, o.Bucket, h.Band, h.Bucket, code, out, errOut)
			}
		}
	}
}

// Ensure that esc leaves printable text alone and quotes anything with a
// control character, so no terminal sequence survives.
func TestEsc(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain id", "plain id"},
		{"café ☕", "café ☕"},
		{"evil\x1b]0;PWNED\a", `"evil\x1b]0;PWNED\a"`},
		{"two\r\nlines", `"two\r\nlines"`},
		{"tab\tsep", `"tab\tsep"`},
		{"del\x7f", `"del\x7f"`},
		{"c1\u009b31m", `"c1\u009b31m"`},
		{"bidi\u202e", `"bidi\u202e"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{`"quoted"`, `"\"quoted\""`},
		{"-", `"-"`}, // NB: a table's mark for none (dedup's DUPLICATE_OF)
		{"--", "--"},
	} {
		if got := esc(c.in); got != c.want {
			t.Errorf("esc(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	// A stored text shows the spaces and joiners of ordinary writing as
	// they are (a multilingual user's U5); an id keeps them escaped, where
	// a no-break space would pass for a column's gap.
	for _, c := range []struct{ in, text, id string }{
		{"東京都\u3000渋谷区", "東京都\u3000渋谷区", `"東京都\u3000渋谷区"`},
		{"Prix\u00a0: 29,90\u202f€", "Prix\u00a0: 29,90\u202f€", `"Prix\u00a0: 29,90\u202f€"`},
		{"می\u200cخواهیم 👨\u200d👩", "می\u200cخواهیم 👨\u200d👩", `"می\u200cخواهیم 👨\u200d👩"`},
		{"bidi\u202e\u3000", `"bidi\u202e\u3000"`, `"bidi\u202e\u3000"`},
		{"line\u2028sep", `"line\u2028sep"`, `"line\u2028sep"`},
		{"evil\x1b[2J\u00a0", `"evil\x1b[2J\u00a0"`, `"evil\x1b[2J\u00a0"`},
		{"zwsp\u200b", `"zwsp\u200b"`, `"zwsp\u200b"`},
		// NB: at either end, a text's no-break or ideographic space would
		// be invisible in its column: quoted (a read-through's R17).
		{"\u3000字下げ", `"\u3000字下げ"`, `"\u3000字下げ"`},
		{"fin\u00a0", `"fin\u00a0"`, `"fin\u00a0"`},
	} {
		if got := escText(c.in); got != c.text {
			t.Errorf("escText(%q) = %s, want %s", c.in, got, c.text)
		}
		if got := esc(c.in); got != c.id {
			t.Errorf("esc(%q) = %s, want %s", c.in, got, c.id)
		}
	}
	if got := string(escapeJSONControls([]byte("{\"id\":\"a\x7fb\u0085c\u00e9\"}"))); got != `{"id":"a\u007fb\u0085cé"}` {
		t.Errorf("escapeJSONControls: %s", got)
	}
}

// hostile are ids and a text that try to retitle the terminal (OSC 0 …
// BEL), clear it, and forge an output line (CR LF).
const (
	evilTitle = "evil\x1b]0;PWNED\a\x1b[2J"
	evilLine  = "evil2\r\nfake-line deleted g1"
	evilText  = "clipboard \x1b]52;c;cHduZWQ=\a text"
)

// Ensure that no table or text output shows a control character from an
// id or a stored text: pairs, query, get, buckets, bucket, clusters,
// explain and the shell print them escaped.
func TestOutputEscapesControls(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	docs := fmt.Sprintf("%s\n%s\n%s\n%s\n",
		mustJSON(map[string]string{"id": evilTitle, "text": "the same text for all three"}),
		mustJSON(map[string]string{"id": evilLine, "text": "the same text for all three"}),
		mustJSON(map[string]string{"id": "plain", "text": "the same text for all three"}),
		mustJSON(map[string]string{"id": "texty", "text": evilText}))
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "--store-text"}, docs); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
	out, _, _ := runLine([]string{"buckets", "--db", dir, "--band", "0", "--top", "1", "--output", "json"}, "")
	var bs bucketStatsJSON
	if err := json.Unmarshal([]byte(out), &bs); err != nil || len(bs.Hottest) == 0 {
		t.Fatalf("buckets: %q %v", out, err)
	}
	qTitle, qLine := esc(evilTitle), esc(evilLine)
	for _, c := range []struct {
		args  []string
		stdin string
		want  []string // escaped forms that must appear
	}{
		{[]string{"pairs", "--threshold", "0.5"}, "", []string{qTitle, qLine}},
		{[]string{"pairs", "--sort=false", "--threshold", "0.5"}, "", []string{qTitle, qLine}},
		{[]string{"query", "--id", "plain", "--threshold", "0.5"}, "", []string{qTitle, qLine}},
		{[]string{"get", evilTitle}, "", []string{qTitle}},
		{[]string{"get", "texty"}, "", []string{esc(evilText)}},
		{[]string{"buckets", "--band", "0"}, "", []string{qTitle}},
		{[]string{"stats"}, "", []string{qTitle}},
		{[]string{"bucket", "0", bs.Hottest[0].Bucket}, "", []string{qTitle, qLine}},
		{[]string{"clusters", "--threshold", "0.5"}, "", []string{qTitle, qLine}},
		{[]string{"explain", evilTitle, evilLine}, "", []string{qTitle, qLine}},
		{[]string{"shell"}, "query --id plain --threshold 0.5\nput \"x\x1b[31m\" some text here\n", []string{qTitle, qLine, esc("x\x1b[31m")}},
	} {
		out, errOut, code := runLine(append([]string{c.args[0], "--db", dir}, c.args[1:]...), c.stdin)
		what := strings.Join(c.args, " ")
		if code != 0 {
			t.Fatalf("%s: exit %d %s", what, code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			for _, r := range line {
				if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("%s: raw control character %U in output line %q", what, r, line)
				}
			}
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %s:\n%s", what, w, out)
			}
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Ensure that escControls escapes exactly the characters esc refuses and
// leaves the rest of a message line, quotes included, as it was.
func TestEscControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`stat dir/a "b": no such file`, `stat dir/a "b": no such file`},
		{"café ☕", "café ☕"},
		{"dir/evil\x1b]0;DIRPWN\a.txt:3", `dir/evil\x1b]0;DIRPWN\a.txt:3`},
		{"two\r\nlines", `two\r\nlines`},
		{"del\x7f c1\u009b bidi\u202e", `del\x7f c1\u009b bidi\u202e`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := escControls(c.in); got != c.want {
			t.Errorf("escControls(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// rawControl returns the first line of s holding a control character
// other than its newline, or "".
func rawControl(s string) string {
	for _, line := range strings.Split(s, "\n") {
		for _, r := range line {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return line
			}
		}
	}
	return ""
}

// Ensure that the write commands print ids and file names escaped too
// (R5): dedup's table, delete's lines, and the stderr lines that name a
// skipped file of a directory input or a position in one.
func TestWriteOutputEscapesControls(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "index")
	docs := mustJSON(map[string]string{"id": "plain", "text": "the same text for all three"}) + "\n" +
		mustJSON(map[string]string{"id": evilTitle, "text": "the same text for all three"}) + "\n" +
		mustJSON(map[string]string{"id": evilLine, "text": "a text of its own, unlike the others"}) + "\n"
	out, errOut, code := runLine([]string{"dedup", "--db", dir, "-"}, docs)
	if code != 0 {
		t.Fatalf("dedup: exit %d %s", code, errOut)
	}
	if l := rawControl(out); l != "" {
		t.Fatalf("dedup: raw control character in %q", l)
	}
	for _, w := range []string{`"evil\x1b]0;PWNED\a\x1b[2J"`, `"evil2\r\nfake-line deleted g1"`} {
		if !strings.Contains(out, w) {
			t.Errorf("dedup: output lacks %s:\n%s", w, out)
		}
	}
	out, errOut, code = runLine([]string{"delete", "--db", dir, evilLine}, "")
	if code != 0 || out != `deleted "evil2\r\nfake-line deleted g1"`+"\n" {
		t.Fatalf("delete: exit %d, %q, %q", code, out, errOut)
	}
	// A directory whose file names carry escapes: a binary one is skipped
	// and named, an empty one too (dedup), and a missing --from file
	// named in the error line.
	src := filepath.Join(tmp, "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "evil\x1b]0;DIRPWN\a.txt"), []byte("bin\x00ary"), 0o644)
	os.WriteFile(filepath.Join(src, "empty\r\n.txt"), []byte("  \n"), 0o644)
	os.WriteFile(filepath.Join(src, "fine.txt"), []byte("a fine text file with words"), 0o644)
	for _, args := range [][]string{
		{"insert", "--db", dir, "--skip-bad", src},
		{"dedup", "--db", dir, "--skip-bad", src},
		{"delete", "--db", dir, "--from", filepath.Join(tmp, "no\x1b[2Jsuch")},
	} {
		out, errOut, _ := runLine(args, "")
		if l := rawControl(out + errOut); l != "" {
			t.Errorf("%s: raw control character in %q", args[0], l)
		}
		if !strings.Contains(errOut, `\x1b`) && !strings.Contains(errOut, `\r\n`) {
			t.Errorf("%s: stderr names no escaped file: %q", args[0], errOut)
		}
	}
}

// Ensure that query --file reads a file as insert does, its UTF-8 byte
// order mark dropped: a short file with one did not find itself at 0.8
// (Jaccard 0.67, the mark's shingles counted). The oracle: the file's
// own stored document at Jaccard 1.
func TestQueryFileWithByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bom.txt")
	if err := os.WriteFile(file, []byte("\xef\xbb\xbfabcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, "--format", "text", file)
	out, _ := mustRun(t, "query", "--db", idx, "--file", file, "--output", "json")
	if !strings.Contains(out, `"id":"bom.txt","jaccard":1.0,`) {
		t.Errorf("query --file of a stored file with a byte order mark: %s, want itself at Jaccard 1", out)
	}
	// - reads stdin, as every other input of the command (it was
	// refused as "open -: no such file").
	out, errOut, code := runLine([]string{"query", "--db", idx, "--file", "-", "--output", "json"}, "abcdef")
	if code != 0 || !strings.Contains(out, `"id":"bom.txt","jaccard":1.0,`) {
		t.Errorf("query --file - of the stored text on stdin: exit %d %s %s, want bom.txt at Jaccard 1", code, out, errOut)
	}
}

// Ensure that query shows each match's stored metadata (a META column, a
// meta member as export writes it) and, with --with-text, its stored
// text: a user who kept URLs with --meta-field needed one get per match.
// The oracle is the input each match was inserted from.
func TestQueryShowsMetaAndText(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.jsonl")
	a := "the quick brown fox jumps over the lazy dog near the river bank"
	b := a + "!"
	body := fmt.Sprintf("{\"id\":\"a\",\"text\":%q,\"url\":\"http://a.example\"}\n{\"id\":\"b\",\"text\":%q,\"url\":\"http://b.example\"}\n", a, b)
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, "--meta-field", "url", in)
	out, _ := mustRun(t, "query", "--db", idx, "--id", "a")
	if lines := strings.Split(out, "\n"); len(lines) < 2 || !strings.HasSuffix(strings.TrimSpace(lines[0]), "META") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "http://b.example") {
		t.Errorf("query's table without its match's metadata:\n%s", out)
	}
	out, _ = mustRun(t, "query", "--db", idx, "--id", "a", "--with-text", "--output", "json")
	var m struct {
		ID   string  `json:"id"`
		Meta string  `json:"meta"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("query --output json: %v: %s", err, out)
	}
	if m.ID != "b" || m.Meta != "http://b.example" || m.Text == nil || *m.Text != b {
		t.Errorf("query --with-text --output json: %s, want b with its url and text", out)
	}
	// Without --with-text, no text.
	if out, _ = mustRun(t, "query", "--db", idx, "--id", "a", "--output", "json"); strings.Contains(out, `"text"`) {
		t.Errorf("query --output json without --with-text: %s", out)
	}
}

// Ensure that query --file inflates a gzip or zstd file, as insert reads
// one: it shingled the compressed bytes (refused as binary). The oracle:
// the plain file's own stored document, at Jaccard 1.
func TestQueryFileCompressed(t *testing.T) {
	dir := t.TempDir()
	text := "a text in a compressed file, with a few more words to shingle"
	plain := filepath.Join(dir, "c.txt")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write([]byte(text))
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write([]byte(text))
	zw.Close()
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, "--format", "text", plain)
	for name, b := range map[string][]byte{"q.gz": gz.Bytes(), "q.zst": zs.Bytes()} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := mustRun(t, "query", "--db", idx, "--file", p, "--output", "json")
		if !strings.Contains(out, `"id":"c.txt","jaccard":1.0,`) {
			t.Errorf("query --file %s: %s, want c.txt at Jaccard 1", name, out)
		}
	}
}

// Ensure that JSON output writes <, > and & as they are: json.Marshal
// wrote an id "a<b>&c" as "a\u003cb\u003e\u0026c", valid JSON that no
// one greps for (the command never writes JSON into HTML).
func TestJSONKeepsHTMLCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	const id, text = "a<b>&c", "if x < y && y > z then <tag> & more of the same text"
	in := fmt.Sprintf(`{"id":%q,"text":%q}`+"\n"+`{"id":"twin","text":%q}`+"\n", id, text, text)
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "-"}, in); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
	for _, args := range [][]string{
		{"export", "--db", dir, "--all"},
		{"query", "--db", dir, "--id", "twin", "--output", "json"},
		{"pairs", "--db", dir, "--output", "json"},
		{"clusters", "--db", dir, "--output", "json"},
	} {
		out, errOut, code := runLine(args, "")
		if code != 0 {
			t.Fatalf("%s: %d %s", args[0], code, errOut)
		}
		if !strings.Contains(out, id) || strings.Contains(out, `\u003c`) {
			t.Errorf("%s: the id is not written as it is:\n%s", args[0], out)
		}
		found := false
		for _, v := range jsonLines(t, args[0], out) {
			found = found || strings.Contains(fmt.Sprint(v), id)
		}
		if !found {
			t.Errorf("%s: no JSON value holds %q:\n%s", args[0], id, out)
		}
	}
}

// Ensure that the hand-written JSON line of a pair is byte for byte what
// encoding/json writes (writeJSONLine), and that every pair it declines (ids
// that need escapes, similarities that encoding/json writes with an
// exponent or refuses) still goes the encoding/json way: random ids over
// every byte class, and similarities across the scale.
// Ensure that a similarity is written with a decimal point or an
// exponent, so that a reader inferring a column's type from its first
// rows takes it for a float (S10-5: DuckDB read 0.85 as 1 in a column of
// 1s), and that it reads back as the same float64. The known answers are
// by hand; the round trip by strconv.ParseFloat.
func TestSimilarityJSON(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", 0: "0.0", 0.85: "0.85", 0.8000000000000002: "0.8000000000000002", 1.0 / 3: "0.3333333333333333",
		1e-6: "0.000001", 9.99e-7: "9.99e-7", 1e-300: "1e-300", 1e20: "100000000000000000000.0", 2e21: "2e+21"} {
		b, err := json.Marshal(similarity(f))
		if err != nil || string(b) != want {
			t.Errorf("%v: %s %v, want %s", f, b, err, want)
		}
		if back, err := strconv.ParseFloat(string(b), 64); err != nil || back != f {
			t.Errorf("%s reads back as %v %v, want %v", b, back, err, f)
		}
		if got := string(appendSimilarity([]byte("x"), f)); got != "x"+want {
			t.Errorf("appendSimilarity %v: %q", f, got)
		}
		// NB: what is not an integer is written as encoding/json writes
		// a float64.
		if plain, _ := json.Marshal(f); f != math.Trunc(f) && string(plain) != want {
			t.Errorf("%v: %s, encoding/json %s", f, want, plain)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if b, err := json.Marshal(similarity(f)); err == nil {
			t.Errorf("%v: %s, want an error as encoding/json gives a float64", f, b)
		}
	}
}

func TestAppendPairJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	chars := []string{"a", "Z", "0", "-", "_", " ", "~", "\"", "\\", "\n", "\x00", "\x7f", "é", "\u2028", "\xc2\x85", "\xff", "<", "&"}
	id := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(4) == 0 {
				b.WriteString(chars[rng.IntN(len(chars))])
			} else {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		return b.String()
	}
	floats := []float64{0, 1, 0.5, 0.8000000000000002, 1e-6, 9.99e-7, 1e-300, 1.0 / 3, 2e21, 1e20, math.Inf(1), math.NaN()}
	rec := 0.9876
	fast := 0
	for i := range 20000 {
		p := pairJSON{A: id(), B: id(), Jaccard: similarity(rng.Float64()), EstimateOnly: rng.IntN(2) == 0}
		if i%3 == 0 {
			p.Jaccard = similarity(floats[rng.IntN(len(floats))])
		}
		if p.EstimateOnly {
			p.Estimate = &p.Jaccard // NB: as pairs writes it
		}
		if rng.IntN(2) == 0 {
			r := rec
			if i%5 == 0 {
				r = floats[rng.IntN(len(floats))]
			}
			p.ExpectedRecall = similarityOf(&r)
		}
		var want bytes.Buffer
		werr := writeJSONLine(&want, p)
		got, ok := appendPairJSON(nil, &p)
		if !ok {
			continue
		}
		fast++
		if werr != nil || string(got) != want.String() {
			t.Fatalf("%+v: appendPairJSON %q, encoding/json %q (%v)", p, got, want.String(), werr)
		}
	}
	if fast < 2000 {
		t.Fatalf("only %d of 20,000 pairs took the hand-written way", fast)
	}
}

// A similarity printed beside a threshold is on its side of it: 0.79998
// was printed 0.8000 beside "threshold 0.8", which explain then called
// below the threshold.
func TestScoreSidesWithThreshold(t *testing.T) {
	for _, tc := range []struct {
		j, t float64
		want string
	}{
		{0.79998, 0.8, "0.79998"},
		{0.8, 0.8, "0.8000"},
		{0.80004, 0.8, "0.8000"},
		{0.123456, 0.8, "0.1235"},
		{0.80005, 0.80006, "0.80005"},
		{1, 0.8, "1.0000"},
	} {
		if got := score(tc.j, tc.t); got != tc.want {
			t.Errorf("score(%v, %v) = %q, want %q", tc.j, tc.t, got, tc.want)
		}
	}
}

// justUnderIndex makes an index of word 1-shingles holding A (words
// w0…w9998) and B (w0…w7998): exact Jaccard 7999/9999, just under the
// default threshold 0.8.
func justUnderIndex(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "idx")
	var a, b []string
	for i := range 9999 {
		a = append(a, fmt.Sprint("w", i))
		if i < 7999 {
			b = append(b, fmt.Sprint("w", i))
		}
	}
	in := fmt.Sprintf("{\"id\":\"A\",\"text\":%q}\n{\"id\":\"B\",\"text\":%q}\n", strings.Join(a, " "), strings.Join(b, " "))
	if out, errOut, code := runLine([]string{"create", "--db", dir, "--shingle", "word", "--shingle-size", "1"}, ""); code != 0 {
		t.Fatalf("create: %s%s", out, errOut)
	}
	if out, errOut, code := runLine([]string{"insert", "--db", dir, "-"}, in); code != 0 {
		t.Fatalf("insert: %s%s", out, errOut)
	}
	return dir
}

// explain of a pair just under the threshold shows enough digits to say so.
func TestExplainJustUnderThreshold(t *testing.T) {
	dir := justUnderIndex(t)
	out, errOut, code := runLine([]string{"explain", "--db", dir, "A", "B"}, "")
	// NB: 7999/9999, by hand.
	if code != 0 || !strings.Contains(out, "exact Jaccard 0.79998, ") || !strings.Contains(out, "below the threshold") {
		t.Fatalf("explain: exit %d\n%s%s", code, out, errOut)
	}
}

// explain --threshold T says what a query at T does: the pair A, B (exact
// Jaccard 7999/9999 by hand, word shingles) is found by a query by A's id
// at --threshold T exactly when explain at T says "found". Without the
// flag the verdict was the index threshold's alone (a shell user's
// review, I2). The oracle: the query's own answer at each threshold.
func TestExplainThreshold(t *testing.T) {
	dir := justUnderIndex(t)
	seen := map[bool]int{}
	for _, th := range []string{"0.5", "0.79", "0.79998", "0.8", "0.9"} {
		out, errOut, code := runLine([]string{"explain", "--db", dir, "A", "B", "--threshold", th}, "")
		if code != 0 {
			t.Fatalf("explain --threshold %s: exit %d: %s", th, code, errOut)
		}
		q, errOut, code := runLine([]string{"query", "--db", dir, "--id", "A", "--threshold", th, "--output", "json"}, "")
		if code != 0 {
			t.Fatalf("query --threshold %s: exit %d: %s", th, code, errOut)
		}
		found := strings.Contains(q, `"B"`)
		seen[found]++
		if says := strings.Contains(out, "\nfound:"); says != found {
			t.Errorf("--threshold %s: explain says found %v, the query finds B %v:\n%s%s", th, says, found, out, q)
		}
		if !strings.Contains(out, "threshold "+th+"\n") {
			t.Errorf("--threshold %s: explain names not the threshold asked:\n%s", th, out)
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("the query found B at %d thresholds and not at %d: want both", seen[true], seen[false])
	}
	if _, errOut, code := runLine([]string{"explain", "--db", dir, "A", "B", "--threshold", "1.5"}, ""); code != 2 || !strings.Contains(errOut, "--threshold") {
		t.Errorf("explain --threshold 1.5: exit %d: %s", code, errOut)
	}
}

// explain names the buckets the two documents share, in the form bucket
// takes (a newcomer's review, W2): the oracle is bucket itself, which
// lists both ids in each, and a band explain does not name, whose bucket
// of A's (from explain of A with itself) does not hold B.
func TestExplainSharedBuckets(t *testing.T) {
	dir := justUnderIndex(t)
	out, errOut, code := runLine([]string{"explain", "--db", dir, "A", "B", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, errOut)
	}
	var e, self struct {
		Bands     int      `json:"bands"`
		Colliding []int    `json:"colliding_bands"`
		Buckets   []string `json:"colliding_buckets"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Colliding) == 0 || len(e.Buckets) != len(e.Colliding) {
		t.Fatalf("explain A B: %s, want a bucket for each of some colliding bands", out)
	}
	out, _, _ = runLine([]string{"explain", "--db", dir, "A", "A", "--output", "json"}, "")
	if err := json.Unmarshal([]byte(out), &self); err != nil || len(self.Buckets) != self.Bands {
		t.Fatalf("explain A A: %s (%v), want every band's bucket", out, err)
	}
	shared := map[int]bool{}
	for i, band := range e.Colliding {
		shared[band] = true
		if e.Buckets[i] != self.Buckets[band] {
			t.Errorf("band %d: explain A B names bucket %s, A's is %s", band, e.Buckets[i], self.Buckets[band])
		}
	}
	for band, bucket := range self.Buckets {
		members, errOut, code := runLine([]string{"bucket", "--db", dir, fmt.Sprint(band), bucket}, "")
		if code != 0 {
			t.Fatalf("bucket %d %s: exit %d: %s", band, bucket, code, errOut)
		}
		ids := strings.Fields(members)
		if !slices.Contains(ids, "A") || slices.Contains(ids, "B") != shared[band] {
			t.Errorf("band %d bucket %s holds %v; explain says B shares it: %v", band, bucket, ids, shared[band])
		}
	}
	table, _, _ := runLine([]string{"explain", "--db", dir, "A", "B"}, "")
	if want := fmt.Sprintf("%d %s", e.Colliding[0], e.Buckets[0]); !strings.Contains(table, "shared buckets (band bucket, as bucket takes them): "+want) {
		t.Errorf("explain's table names not the first shared bucket (%s):\n%s", want, table)
	}
}

// tune refuses a recall create refuses: --recall 0 was taken as the
// default 0.99, and the banding shown was not for the recall asked.
func TestTuneRefusesRecallCreateRefuses(t *testing.T) {
	for _, r := range []string{"0", "1", "-1", "NaN", "1.5"} {
		_, errOut, code := runLine([]string{"tune", "--threshold", "0.5", "--recall", r}, "")
		_, cerrOut, ccode := runLine([]string{"create", "--db", filepath.Join(t.TempDir(), "idx"), "--threshold", "0.5", "--recall", r}, "")
		if code != 2 || ccode != 2 || !strings.Contains(errOut, "--recall") || !strings.Contains(cerrOut, "--recall") {
			t.Errorf("--recall %s: tune exit %d %q, create exit %d %q; want both refused", r, code, errOut, ccode, cerrOut)
		}
	}
}

// JSON lines escape what a table escapes: U+202E was written raw (a table
// showed "\u202etrl"); the escapes decode to the same string.
func TestJSONEscapesNonPrinting(t *testing.T) {
	id := "x\u202etrl\u2066y\U000E0001z\u00e9\U0001F600"
	b, err := marshalJSON(map[string]string{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	got := escapeJSONControls(b)
	if want := `{"id":"x\u202etrl\u2066y\udb40\udc01zé😀"}`; string(got) != want {
		t.Errorf("escapeJSONControls: %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["id"] != id {
		t.Errorf("decoded back: %q, %v; want %q", back["id"], err, id)
	}
	// idLine quotes an id the shell would split or take a quote in.
	if got := idLine([]string{"it's", "a b", "plain"}); got != `"it's" "a b" plain` {
		t.Errorf("idLine: %s", got)
	}
}

// Ensure that the tables of pairs, query, dedup and explain show each id
// so that the shell's own word splitting gives it back: ids with a blank
// or a quote were written bare (a pair of "sp ace" read as three words),
// where buckets and clusters quoted them. The oracle: splitWords, the
// shell's parser, on each row, against the ids as stored.
func TestTablesQuoteIDsForTheShell(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	text := "a text long enough to be shingled, the same in every document here"
	ids := []string{"sp ace", "sing'le", `q"uote`, "plain"}
	var in strings.Builder
	for _, id := range ids {
		b, _ := json.Marshal(map[string]string{"id": id, "text": text})
		in.Write(b)
		in.WriteByte('\n')
	}
	input := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, "build", "--db", dir, "--progress", "none", input)
	isID := func(s string) bool { return slices.Contains(ids, s) }
	check := func(name, out string, fields int) {
		t.Helper()
		rows := strings.Split(strings.TrimSpace(out), "\n")[1:] // the header
		if len(rows) == 0 {
			t.Fatalf("%s: no rows\n%s", name, out)
		}
		for _, row := range rows {
			w, err := splitWords(row)
			if err != nil || len(w) != fields || !isID(w[0]) || (name != "query" && !isID(w[1])) {
				t.Errorf("%s: row %q splits into %q (%v), want %d words, the ids as stored", name, row, w, err, fields)
			}
		}
	}
	check("pairs", runOK(t, "pairs", "--db", dir), 3)
	q := runOK(t, "query", "--db", dir, "--id", "sp ace")
	check("query", q[:strings.LastIndex(strings.TrimSpace(q), "\n")], 4) // NB: less its summary line
	check("dedup", runOK(t, "dedup", "--db", dir, input), 3)
	out := runOK(t, "explain", "--db", dir, "sp ace", "sing'le")
	if w, err := splitWords(strings.SplitN(out, "\n", 2)[0]); err != nil || len(w) != 3 || w[0] != "sp ace" || w[2] != "sing'le" {
		t.Errorf("explain's first line splits into %q (%v)\n%s", w, err, out)
	}
	// get's id line and bucket's lines too (the shell review's F9, a
	// newcomer's N2): they wrote "sp ace" bare.
	for _, id := range ids {
		first := strings.SplitN(runOK(t, "get", "--db", dir, id), "\n", 2)[0]
		if w, err := splitWords(strings.TrimPrefix(first, "id: ")); err != nil || len(w) != 1 || w[0] != id {
			t.Errorf("get %s: id line %q splits into %q (%v)", id, first, w, err)
		}
	}
	var buckets struct {
		Hottest []struct {
			Band   int    `json:"band"`
			Bucket string `json:"bucket"`
		} `json:"hottest"`
	}
	bj := runOK(t, "buckets", "--db", dir, "--top", "1", "--output", "json")
	if err := json.Unmarshal([]byte(bj), &buckets); err != nil || len(buckets.Hottest) == 0 {
		t.Fatalf("buckets --output json: %v\n%s", err, bj)
	}
	b := buckets.Hottest[0]
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(runOK(t, "bucket", "--db", dir, fmt.Sprint(b.Band), b.Bucket)), "\n") {
		w, err := splitWords(line)
		if err != nil || len(w) != 1 {
			t.Errorf("bucket: line %q splits into %q (%v)", line, w, err)
			continue
		}
		got = append(got, w[0])
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Errorf("bucket lists %q, want %q", got, want)
	}
}

// Ensure that an output named as one of the process's own open files
// (--out /dev/stdout, /dev/fd/1) is written through it, after what is
// there, when standard output is redirected to a file: it was resolved
// to the file and a temporary file renamed over it, which lost the
// file's earlier lines and all else written to standard output, with exit
// 0 (a review); and that --removed naming standard output, where the kept
// documents go, is refused as the same file. In processes of their own,
// standard output a file opened for appending, as `>> night.log` opens
// it. The oracle: the same outputs written by the commands in process.
func TestOutputToOwnStdout(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "build", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl")
	wantPairs, _ := mustRun(t, "pairs", "--db", idx, "--limit", "3", "--output", "csv")
	removedFile := filepath.Join(t.TempDir(), "removed.jsonl")
	mustRun(t, "export", "--db", idx, "--removed", removedFile)
	wantRemoved, err := os.ReadFile(removedFile)
	if err != nil || len(wantRemoved) == 0 {
		t.Fatalf("the removed documents: %d bytes, %v", len(wantRemoved), err)
	}
	const prev = "previous log line\n"
	appendTo := func(args ...string) (string, int) {
		t.Helper()
		log := filepath.Join(t.TempDir(), "night.log")
		if err := os.WriteFile(log, []byte(prev), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		c := lshdbProcess(args...)
		c.Stdout = f
		var stderr strings.Builder
		c.Stderr = &stderr
		err = c.Run()
		f.Close()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(log)
		return string(b), code
	}
	for _, out := range []string{"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"} {
		if _, err := os.Stat(out); err != nil {
			continue // NB: no /proc here
		}
		got, code := appendTo("pairs", "--db", idx, "--limit", "3", "--output", "csv", "--out", out)
		if code != 0 || got != prev+wantPairs {
			t.Errorf("pairs --out %s >> log: exit %d, the log:\n%s\nwant:\n%s", out, code, got, prev+wantPairs)
		}
	}
	got, code := appendTo("export", "--db", idx, "--out", filepath.Join(t.TempDir(), "kept.jsonl"), "--removed", "/dev/stdout")
	if code != 0 || !strings.HasPrefix(got, prev) || !strings.Contains(got, string(wantRemoved)) {
		t.Errorf("export --removed /dev/stdout >> log: exit %d, the log (%d bytes) does not hold the line before and the removed documents (%d bytes)", code, len(got), len(wantRemoved))
	}
	if got, code := appendTo("export", "--db", idx, "--removed", "/dev/stdout"); code != 2 || got != prev {
		t.Errorf("export --removed /dev/stdout, the kept documents to standard output: exit %d, the log %d bytes; want exit 2 and the log as it was", code, len(got))
	}
	// A descriptor lshdb was not given (one it may hold open itself: a
	// table, a log) is refused, writing nothing.
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--limit", "3", "--out", "/dev/fd/97"}, ""); code == 0 || !strings.Contains(errOut, "descriptor 97 was not given to lshdb") {
		t.Errorf("pairs --out /dev/fd/97: exit %d %s", code, errOut)
	}
	// Given one (3>>log), it is written after what the log holds.
	log := filepath.Join(t.TempDir(), "fd3.log")
	os.WriteFile(log, []byte(prev), 0o644)
	f3, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := lshdbProcess("pairs", "--db", idx, "--limit", "3", "--output", "csv", "--out", "/dev/fd/3")
	c.ExtraFiles = []*os.File{f3}
	out, err := c.CombinedOutput()
	f3.Close()
	if got, _ := os.ReadFile(log); err != nil || string(got) != prev+wantPairs {
		t.Errorf("pairs --out /dev/fd/3, given 3>>log: %v %s; the log:\n%s", err, out, got)
	}
}

// Ensure that query --output json --header starts with a line saying what
// was queried and found (found before --top, candidates, threshold) and
// ends with a line counting the matches, also when nothing matched, so
// that a stream of queries (the shell's) splits at each header. Oracle:
// the same queries' table summaries and match lines without --header.
func TestQueryHeader(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	type header struct {
		Header struct {
			Command   string  `json:"command"`
			Threshold float64 `json:"threshold"`
			Docs      int     `json:"docs"`
			Query     struct {
				ID         *string `json:"id"`
				File       string  `json:"file"`
				Found      int     `json:"found"`
				Top        int     `json:"top"`
				Candidates int     `json:"candidates"`
			} `json:"query"`
		} `json:"header"`
	}
	type end struct {
		End *struct {
			Lines int `json:"lines"`
		} `json:"end"`
	}
	for _, c := range []struct {
		args              []string
		id                string
		found, top, lines int
	}{
		{[]string{"--text", "ABCDEFGH"}, "", 2, 0, 2},
		{[]string{"--text", "ABCDEFGH", "--top", "1"}, "", 2, 1, 1},
		{[]string{"--id", "fox1"}, "fox1", 1, 0, 1},
		{[]string{"--id", "cat"}, "cat", 0, 0, 0}, // nothing matched: still a header and an end
	} {
		q := append([]string{"query", "--db", idx}, c.args...)
		plain, plainErr := mustRun(t, append(q, "--output", "json")...)
		table, _ := mustRun(t, q...)
		out, headerErr := mustRun(t, append(q, "--output", "json", "--header")...)
		// With no match and no header, JSON output says so on stderr, as
		// pairs does: nothing at all read as a query that did not run (a
		// newcomer's review, NC2-2). The header says it otherwise.
		if said := strings.Contains(plainErr, "no match at Jaccard >= 0.8 among"); said != (c.found == 0) || headerErr != "" {
			t.Errorf("%v --output json: stderr %q (with --header %q), want the no-match line only when nothing matched", c.args, plainErr, headerErr)
		}
		// The end line's seconds are to the microsecond, not a float64's
		// noise (NC2-11: 1.9356593069999999).
		if m := regexp.MustCompile(`"elapsed_seconds":([0-9.e-]+)`).FindStringSubmatch(out); m == nil || !regexp.MustCompile(`^[0-9]+(\.[0-9]{1,6})?$`).MatchString(m[1]) {
			t.Errorf("%v --header: the end line's elapsed_seconds: %v in\n%s", c.args, m, out)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		var h header
		var e end
		if len(lines) < 2 || json.Unmarshal([]byte(lines[0]), &h) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &e) != nil || e.End == nil {
			t.Fatalf("%v --header: want a header, the matches and an end line:\n%s", c.args, out)
		}
		if got := strings.Join(lines[1:len(lines)-1], "\n"); strings.TrimSuffix(plain, "\n") != got {
			t.Errorf("%v: the matches differ from those without --header:\n%s\nwant\n%s", c.args, got, plain)
		}
		hq := h.Header.Query
		if h.Header.Command != "query" || h.Header.Threshold != 0.8 || h.Header.Docs != 6 || hq.Found != c.found || hq.Top != c.top || e.End.Lines != c.lines {
			t.Errorf("%v: header %+v, end %+v; want found %d, top %d, %d lines", c.args, h.Header, *e.End, c.found, c.top, c.lines)
		}
		if (hq.ID == nil) != (c.id == "") || hq.ID != nil && *hq.ID != c.id {
			t.Errorf("%v: the header's id is %v, want %q", c.args, hq.ID, c.id)
		}
		if want := fmt.Sprintf("among %s", counted(hq.Candidates, "candidate", "candidates")); !strings.Contains(table, want) {
			t.Errorf("%v: header says %d candidates; the table: %s", c.args, hq.Candidates, table)
		}
	}
	// The shell's stream of queries splits at the headers.
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "query --id cat --output json --header\nquery --id fox1 --output json --header\n")
	if n := strings.Count(out, `{"header"`); code != 0 || n != 2 || !strings.HasPrefix(out, `{"header"`) {
		t.Errorf("shell: exit %d, %d headers:\n%s%s", code, n, out, errOut)
	}
	if _, errOut, code := runLine([]string{"query", "--db", idx, "--id", "cat", "--header"}, ""); code != 2 || !strings.Contains(errOut, "--header needs --output json") {
		t.Errorf("--header with a table: exit %d: %s", code, errOut)
	}
	f := filepath.Join(t.TempDir(), "q.txt")
	if err := os.WriteFile(f, []byte("abcdefgh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := mustRun(t, "query", "--db", idx, "--file", f, "--output", "json", "--header"); !strings.Contains(out, `"file":`+fmt.Sprintf("%q", f)) {
		t.Errorf("--file: the header does not name the file:\n%s", out)
	}
	// A file without a shingle is named (Q7).
	if err := os.WriteFile(f, []byte(" \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"query", "--db", idx, "--file", f}, ""); code != 1 || !strings.Contains(errOut, "--file "+f+": the query text has no shingles") {
		t.Errorf("--file of white space: exit %d: %s", code, errOut)
	}
	// An empty --text is a bad flag value (exit 2), said as about the
	// query, not a stored document (SH-8: "document has no shingles:
	// query text", exit 1).
	for _, text := range []string{"", " \t "} {
		if _, errOut, code := runLine([]string{"query", "--db", idx, "--text", text}, ""); code != 2 || errOut != "lshdb: --text: the query text has no shingles (it is empty, white space, or stop words alone): it matches nothing\n" {
			t.Errorf("--text %q: exit %d: %q", text, code, errOut)
		}
	}
	// A --text that is not UTF-8 is a bad flag value: each bad byte read
	// as U+FFFD, a Latin-1 text matched another at 1.0 (EMB-9), where a
	// file of it is refused as not UTF-8.
	if _, errOut, code := runLine([]string{"query", "--db", idx, "--text", "caf\xe9 au lait"}, ""); code != 2 || !strings.Contains(errOut, "--text is not UTF-8") {
		t.Errorf("--text in Latin-1: exit %d: %q", code, errOut)
	}
	// The hint to quote a flag's value is given where the stray words
	// came right after it (SH-8: report extra --out x.html was told to
	// write --out "x.html extra").
	for _, c := range []struct {
		args []string
		hint bool
	}{
		{[]string{"query", "--db", idx, "--text", "hello", "world"}, true},
		{[]string{"query", "--db", idx, "--text=hello", "world"}, true},
		{[]string{"query", "world", "--db", idx, "--text", "hello"}, false},
		{[]string{"query", "--text", "hello", "--db", idx, "world"}, false},
	} {
		_, errOut, code := runLine(c.args, "")
		if hint := strings.Contains(errOut, `a value with spaces needs quotes: --text "hello world"`); code != 2 || hint != c.hint {
			t.Errorf("%q: exit %d, hint %v (want %v): %s", c.args, code, hint, c.hint, errOut)
		}
	}
	// The shell's statements alike (RT6-5): the first is hinted, the
	// second not.
	_, errOut, _ = runLine([]string{"shell", "--db", idx}, "query --text hello world\nquery world --text hello\n")
	if n := strings.Count(errOut, `a value with spaces needs quotes: --text "hello world"`); n != 1 || strings.Count(errOut, "query takes no arguments, got 1") != 2 {
		t.Errorf("the shell: %d hints, want 1 of the 2 statements: %s", n, errOut)
	}
}

// Ensure that query takes --limit as --top (pairs and the HTTP API name
// the count so; it was an unknown flag: an inspection review's Q6), in
// the command and in the shell, its summary naming the flag given. Oracle:
// the same query with --top.
func TestQueryLimitIsTop(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	want, _ := mustRun(t, "query", "--db", idx, "--text", "ABCDEFGH", "--top", "1")
	if !strings.Contains(want, "1 of 2 matches") {
		t.Fatalf("--top 1 of the two copies of abcdefgh: %s", want)
	}
	// The summary names the flag given (D-6).
	want = strings.Replace(want, "(--top)", "(--limit)", 1)
	if got, _ := mustRun(t, "query", "--db", idx, "--text", "ABCDEFGH", "--limit", "1"); got != want {
		t.Errorf("--limit 1:\n%s\nwant as --top 1, naming --limit:\n%s", got, want)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "query --text ABCDEFGH --limit=1\nquery --text ABCDEFGH --top=1\n")
	if l, tp := strings.Index(out, "1 of 2 matches (--limit)"), strings.Index(out, "1 of 2 matches (--top)"); code != 0 || l < 0 || tp < l {
		t.Errorf("shell query --limit=1, then --top=1: exit %d: %s%s", code, out, errOut)
	}
	// A bad count names the flag as given (it said --top of --limit 0),
	// also when one shell runs the command again with the other name; 0
	// is all, as without the flag (it was refused: N2-5).
	all, _ := mustRun(t, "query", "--db", idx, "--text", "ABCDEFGH")
	for _, flag := range []string{"--limit", "--top"} {
		if _, errOut, code := runLine([]string{"query", "--db", idx, "--text", "ABCDEFGH", flag, "-1"}, ""); code != 2 || !strings.Contains(errOut, flag+" -1: give 0 (all, the default) or more") {
			t.Errorf("%s -1: exit %d: %s", flag, code, errOut)
		}
		if got, _ := mustRun(t, "query", "--db", idx, "--text", "ABCDEFGH", flag, "0"); got != all || !strings.Contains(all, "2 matches") {
			t.Errorf("%s 0:\n%s\nwant all, as without it:\n%s", flag, got, all)
		}
	}
	_, errOut, _ = runLine([]string{"shell", "--db", idx}, "query --text ABCDEFGH --limit -1\nquery --text ABCDEFGH --top -1\n")
	if i, j := strings.Index(errOut, "--limit -1: give"), strings.Index(errOut, "--top -1: give"); i < 0 || j < i {
		t.Errorf("shell: --limit -1 then --top -1:\n%s", errOut)
	}
	// Both names with two counts are refused (the last won, and the
	// summary said --limit: an inspection review's SH-6); with one count,
	// taken.
	for _, args := range [][]string{{"--limit", "2", "--top", "1"}, {"--top", "1", "--limit", "2"}} {
		if _, errOut, code := runLine(append([]string{"query", "--db", idx, "--text", "ABCDEFGH"}, args...), ""); code != 2 || !strings.Contains(errOut, "--top 1 and --limit 2 disagree") {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
	}
	if got, _ := mustRun(t, "query", "--db", idx, "--text", "ABCDEFGH", "--top", "1", "--limit", "1"); got != want {
		t.Errorf("--top 1 --limit 1:\n%s\nwant as --limit 1:\n%s", got, want)
	}
}

// stats names the kinds that begin no table apart, not as "ids 0,
// postings 0" (a newcomer's review, W5); the answers are by hand.
func TestTablesLine(t *testing.T) {
	const head = "tables on disk (compressed), each counted by the kind of its first key (a table may hold several kinds): "
	for _, c := range []struct {
		tb   map[string]uint64
		want string
	}{
		{map[string]uint64{"docs": 10}, "docs 10; ids, postings, manifest and counters begin no table (they are in these)"},
		{map[string]uint64{"docs": 10, "ids": 2, "postings": 7, "expiry": 1, "manifest+counters": 3}, "docs 10, ids 2, postings 7, expiry index 1, manifest and counters 3"},
		{map[string]uint64{"docs": 10, "ids": 2, "postings": 7, "manifest+counters": 3}, "docs 10, ids 2, postings 7, manifest and counters 3"},
		{map[string]uint64{}, "none yet (the writes are in the write-ahead log)"},
	} {
		if got := tablesLine(c.tb); got != head+c.want {
			t.Errorf("tablesLine(%v):\n%s\nwant\n%s", c.tb, got, head+c.want)
		}
	}
}

// Ensure that --quiet leaves on stderr only errors and warnings: a build,
// pairs and clusters that succeed print nothing there (nor build's
// summary on stdout), where each does without it, and keep their data on
// stdout; an error is still said (a nightly operator's review, N2: a cron
// mail every night). The oracle: the same runs without --quiet.
func TestQuiet(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	mustRun(t, "gen", "--n", "300", "--seed", "3", "--out", in)
	for _, c := range []struct {
		args     []string
		dataLine bool // stdout holds the run's data
	}{
		{[]string{"build", "--db", filepath.Join(dir, "idx"), "--disk-reserve", "2", in}, false},
		{[]string{"pairs", "--db", filepath.Join(dir, "idx"), "--stats"}, true},
		{[]string{"clusters", "--db", filepath.Join(dir, "idx")}, true},
	} {
		loud, loudErr, code := runLine(c.args, "")
		if code != 0 || loudErr == "" {
			t.Fatalf("%v: exit %d, stderr %q: want a summary or a note said", c.args, code, loudErr)
		}
		if c.args[0] == "build" {
			os.RemoveAll(filepath.Join(dir, "idx"))
		}
		out, errOut, code := runLine(append([]string{"--quiet"}, c.args...), "")
		// NB: what a flag asks for stays: pairs --stats's line (a
		// scripting operator's CL6: it went without a word).
		want := ""
		if slices.Contains(c.args, "--stats") {
			for l := range strings.Lines(loudErr) {
				if strings.HasPrefix(l, "pairs: ") {
					want = l
				}
			}
			if want == "" {
				t.Fatalf("%v: no statistics line on stderr: %q", c.args, loudErr)
			}
		}
		if code != 0 || errOut != want {
			t.Errorf("%v --quiet: exit %d, stderr %q; want %q", c.args, code, errOut, want)
		}
		if c.dataLine && (out == "" || out != loud) {
			t.Errorf("%v --quiet: stdout %q, want the run's data as without it (%q)", c.args, out, loud)
		}
		if !c.dataLine && out != "" {
			t.Errorf("%v --quiet: stdout %q, want no summary", c.args, out)
		}
	}
	// The maintenance commands a cron job runs: each once without
	// --quiet (a summary on stdout) and once with it (nothing), on an
	// index of its own (an operator's review, DR6: upgrade's summary
	// stayed).
	for _, c := range []struct {
		name string
		args func(idx string) []string
	}{
		{"upgrade", func(idx string) []string { return []string{"upgrade", "--db", idx} }},
		{"compact", func(idx string) []string { return []string{"compact", "--db", idx} }},
		{"purge", func(idx string) []string { return []string{"purge", "--db", idx} }},
		{"backup", func(idx string) []string { return []string{"backup", "--db", idx, "--to", idx + ".copy"} }},
		{"restore", func(idx string) []string { return []string{"restore", "--from", idx, "--db", idx + ".restored"} }},
		{"delete", func(idx string) []string { return []string{"delete", "--db", idx, "libghc-agda-dev", "hunspell-nl"} }},
		{"drop", func(idx string) []string { return []string{"drop", "--db", idx, "--yes"} }},
		// NB: create's parameters and report's line are summaries too (a
		// scripting operator's CL5).
		{"create", func(idx string) []string { return []string{"create", "--db", idx + ".new"} }},
		{"report", func(idx string) []string { return []string{"report", "--db", idx, "--out", idx + ".html"} }},
	} {
		for _, quiet := range []bool{false, true} {
			idx := filepath.Join(dir, fmt.Sprintf("%s-%v", c.name, quiet))
			if err := os.CopyFS(idx, os.DirFS("../../testdata/golden/format3/text")); err != nil {
				t.Fatal(err)
			}
			args := c.args(idx)
			if quiet {
				args = append([]string{"--quiet"}, args...)
			}
			out, errOut, code := runLine(args, "")
			switch {
			case code != 0:
				t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
			case !quiet && out == "":
				t.Errorf("%v: no summary on stdout (stderr %q)", args, errOut)
			case quiet && (out != "" || errOut != ""):
				t.Errorf("%v: stdout %q, stderr %q; want nothing", args, out, errOut)
			}
		}
	}
	_, errOut, code := runLine([]string{"--quiet", "clusters", "--db", filepath.Join(dir, "none")}, "")
	if code != 1 || !strings.HasPrefix(errOut, "lshdb: database does not exist") {
		t.Errorf("--quiet, an error: exit %d, stderr %q; want it said", code, errOut)
	}
}

// Ensure that no output of any command is written into an index's
// directory: export --out idx/000006.sst and pairs --out
// idx/MANIFEST-000001, and --rejects and --cpuprofile there, replaced a
// file of the store, exited 0, and left an index that no longer opened
// (a bad-input review, B1). Each is refused as a usage error (exit 2),
// named as such; a link outside the index that leads into it too. Oracle:
// every file of the index the same bytes afterwards, and check passing.
func TestOutputsRefuseTheIndexDirectory(t *testing.T) {
	base := t.TempDir()
	idx := filepath.Join(base, "idx")
	in := "../../testdata/cmd/inputs/docs.jsonl"
	mustRun(t, "insert", "--db", idx, "--store-text", in)
	files := func() map[string]string {
		entries, err := os.ReadDir(idx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(idx, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = string(b)
		}
		return m
	}
	before := files()
	exported, _ := mustRun(t, "export", "--db", idx, "--all")
	var table, manifest string
	for name := range before {
		switch {
		case strings.HasSuffix(name, ".sst"):
			table = name
		case strings.HasPrefix(name, "MANIFEST-"):
			manifest = name
		}
	}
	if table == "" || manifest == "" {
		t.Fatalf("the index holds no table or no manifest: %v", slices.Collect(func(yield func(string) bool) {
			for n := range before {
				yield(n)
			}
		}))
	}
	bad := filepath.Join(base, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"id\":\"x\",\"text\":\"a document\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "out.jsonl")
	if err := os.Symlink(filepath.Join(idx, table), link); err != nil {
		t.Fatal(err)
	}
	// NB: a link to a file not yet made in the index, relative, which
	// the output would make (a read-through's R4).
	dangling := filepath.Join(base, "profile.out")
	if err := os.Symlink(filepath.Join("idx", "cpu.prof"), dangling); err != nil {
		t.Fatal(err)
	}
	into := func(name string) string { return filepath.Join(idx, name) }
	for _, args := range [][]string{
		{"export", "--db", idx, "--all", "--out", into(table)},
		{"export", "--db", idx, "--all", "--out", link},
		{"pairs", "--db", idx, "--out", into(manifest)},
		{"clusters", "--db", idx, "--out", into("clusters.txt")},
		{"filter", "--db", idx, "--out", into("kept.jsonl"), in},
		{"report", "--db", idx, "--out", into("report.html")},
		{"gen", "--n", "5", "--out", into(table)},
		{"insert", "--db", idx, "--skip-bad", "--rejects", into(table), bad},
		{"get", "--db", idx, "--cpuprofile", into(table), "x"},
		{"get", "--db", idx, "--cpuprofile", dangling, "x"},
		{"export", "--db", idx, "--all", "--out", dangling},
		{"tune", "--threshold", "0.8", "--plot", into("curve.svg")},
	} {
		_, errOut, code := runLine(args, "")
		if code != 2 || !strings.Contains(errOut, "holds an index") {
			t.Errorf("lshdb %s: exit %d, want 2 with the index named:\n%s", strings.Join(args, " "), code, errOut)
		}
	}
	// NB: a writable open (insert's) makes Pebble's logs and manifest
	// anew: the tables must stay, byte for byte, and the documents.
	after := files()
	if after[table] != before[table] {
		t.Errorf("%s changed (%d bytes, were %d)", table, len(after[table]), len(before[table]))
	}
	for _, name := range []string{"clusters.txt", "kept.jsonl", "report.html", "curve.svg", "cpu.prof"} {
		if _, ok := after[name]; ok {
			t.Errorf("%s was made in the index", name)
		}
	}
	mustRun(t, "check", "--db", idx)
	if got, _ := mustRun(t, "export", "--db", idx, "--all"); got != exported {
		t.Errorf("the index's documents changed:\n%s\nwere\n%s", got, exported)
	}
	// NB: a directory with a file named MANIFEST-… alone is no index.
	notes := filepath.Join(base, "notes")
	os.Mkdir(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "MANIFEST-2026-12.txt"), []byte("a list"), 0o644)
	mustRun(t, "export", "--db", idx, "--all", "--out", filepath.Join(notes, "all.jsonl"))
}

// Ensure that gen refuses an --out that is its --source (it replaced the
// corpus it read: a bad-input review, B7), under another spelling too,
// and a --source with no text (it exited 0 with an empty file: B8), each
// leaving the files as they were. Oracle: the source's bytes, and no
// output made.
func TestGenRefusesItsSourceAndNoText(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../testdata/cmd/inputs/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	source := filepath.Join(dir, "source.jsonl")
	os.WriteFile(source, src, 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	blank := filepath.Join(dir, "blank.jsonl")
	os.WriteFile(blank, []byte(`{"id":"a","text":"  "}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gen", "--n", "10", "--out", source, "--source", source}, 2, "gen would replace the corpus it reads"},
		{[]string{"gen", "--n", "10", "--out", filepath.Join(dir, ".", "source.jsonl"), "--source", source}, 2, "gen would replace the corpus it reads"},
		{[]string{"gen", "--n", "10", "--out", out, "--source", empty}, 1, "holds no text to make documents of"},
		{[]string{"gen", "--n", "10", "--out", out, "--source", blank}, 1, "holds no text to make documents of"},
	} {
		_, errOut, code := runLine(c.args, "")
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("lshdb %s: exit %d, want %d with %q:\n%s", strings.Join(c.args, " "), code, c.code, c.msg, errOut)
		}
	}
	if b, _ := os.ReadFile(source); !bytes.Equal(b, src) {
		t.Errorf("the source changed: %d bytes, were %d", len(b), len(src))
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an output was made: %v", err)
	}
	// NB: and a source with text makes the documents asked for.
	mustRun(t, "gen", "--n", "10", "--out", out, "--source", source)
	if b, _ := os.ReadFile(out); bytes.Count(b, []byte("\n")) != 10 {
		t.Errorf("gen --n 10 wrote %d lines", bytes.Count(b, []byte("\n")))
	}
}
