package docio

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/minhash"
)

// mixedJSONL writes lines of every kind the chunked reader must keep in
// order: records with and without escapes, CRLF ends, blank and malformed
// lines, lines over the record limit, and lines longer than the read
// buffer and than hugeLine; the limit to read them with is returned.
func mixedJSONL(n int) ([]byte, int) {
	const limit = hugeLine + 1<<20 + 100
	rng := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	for i := range n {
		switch k := rng.IntN(10000); {
		case k < 250:
			b.WriteString("  \t")
		case k < 500:
			fmt.Fprintf(&b, `{"id":"bad%d","text":`, i)
		case k < 501:
			fmt.Fprintf(&b, `{"id":"b%d","text":"%s"}`, i, strings.Repeat("b", 300<<10)) // over the read buffer
		case k < 502:
			fmt.Fprintf(&b, `{"id":"h%d","text":"%s"}`, i, strings.Repeat("h", hugeLine+rng.IntN(1<<20))) // alone
		case k < 503:
			fmt.Fprintf(&b, `{"id":"x%d","text":"%s"}`, i, strings.Repeat("x", limit)) // over the limit
		case k < 5000:
			fmt.Fprintf(&b, `{"id":%d,"text":"line %d \"quoted\"\n\u00e9"}`, i, i)
		default:
			fmt.Fprintf(&b, `{"id":"r%d","text":"plain record %d"}`, i, i)
		}
		if rng.IntN(10) == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), limit
}

// oracleLines reads data line by line on one goroutine, the way Read did
// before it parsed in chunks: one entry per record or bad record.
func oracleLines(name string, data []byte, o Options) []string {
	o.EnsureDefaults()
	var s lineScan
	var out []string
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		n := len(line)
		t := trailing(line, len(line))
		if i == len(lines)-1 && line[n-1] == '\r' {
			t = 1 // NB: a lone CR ends the input's last line
		}
		line = line[:len(line)-t]
		switch {
		case len(line) > o.MaxRecordBytes:
			out = append(out, badRecord(name, i+1, "", nil, tooLong(n, o.MaxRecordBytes)).Error()+" raw=0")
		case len(bytes.TrimSpace(line)) == 0:
		default:
			rec, err := parseJSON(&o, &s, name, i+1, line)
			if err != nil {
				out = append(out, badRecord(name, i+1, rec.ID, line, err).Error()+fmt.Sprintf(" raw=%d", len(line)))
			} else {
				out = append(out, fmt.Sprintf("%s id=%s text=%d:%s raw=%d", rec.Pos(), rec.ID, len(rec.Text), hashID(rec.Text), len(rec.Raw)))
			}
		}
	}
	return out
}

// readAll reads with Read and formats as oracleLines does.
func readAll(t *testing.T, paths []string, stdin io.Reader, o Options) []string {
	t.Helper()
	var out []string
	for rec, err := range Read(context.Background(), paths, stdin, o) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			out = append(out, re.Error()+fmt.Sprintf(" raw=%d", len(re.Raw)))
		case err != nil:
			t.Fatal(err)
		default:
			// NB: a CR before the line end is data ("x\r\r\n": raw "x\r"),
			// a LF never is.
			if bytes.HasSuffix(rec.Raw, []byte("\n")) || rec.End == "" && bytes.HasSuffix(rec.Raw, []byte("\r")) {
				t.Fatalf("%s: raw %q ends with a line end (end %q)", rec.Pos(), rec.Raw, rec.End)
			}
			out = append(out, fmt.Sprintf("%s id=%s text=%d:%s raw=%d", rec.Pos(), rec.ID, len(rec.Text), hashID(rec.Text), len(rec.Raw)))
		}
	}
	return out
}

// Ensure that JSON Lines parsed in chunks on every core come out in the
// input's order with their lines, as one goroutine read them: records,
// bad and blank lines, over-long lines and lines that go alone, from a
// file, a gzip file and a reader that may wait (chunks cut at every read).
func TestJSONLChunksInOrder(t *testing.T) {
	data, limit := mixedJSONL(40000)
	dir := t.TempDir()
	plain := filepath.Join(dir, "m.jsonl")
	gz := filepath.Join(dir, "m.jsonl.gz")
	os.WriteFile(plain, data, 0o644)
	os.WriteFile(gz, gzipBytes(data), 0o644)
	o := Options{MaxRecordBytes: limit}
	for _, c := range []struct {
		name  string
		paths []string
		stdin io.Reader
	}{
		{plain, []string{plain}, nil},
		{gz, []string{gz}, nil},
		{"stdin", []string{"-"}, io.MultiReader(bytes.NewReader(data[:len(data)/3]), bytes.NewReader(data[len(data)/3:]))},
	} {
		want := oracleLines(c.name, data, o)
		got := readAll(t, c.paths, c.stdin, o)
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", c.name, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: record %d is\n%.300s\nwant\n%.300s", c.name, i, got[i], want[i])
			}
		}
	}
}

// Ensure that a record from a pipe is yielded as soon as its line is
// read, not held until a chunk fills, and that a loop that breaks while
// the writer still holds the pipe open returns at once.
func TestJSONLPipe(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	next := make(chan bool)
	go func() {
		for i := 0; <-next; i++ {
			fmt.Fprintf(pw, "{\"id\":\"p%d\",\"text\":\"t\"}\n", i)
		}
	}()
	done := make(chan []string)
	go func() {
		var ids []string
		next <- true
		for rec, err := range Read(context.Background(), nil, pr, Options{}) {
			if err != nil {
				t.Error(err)
				break
			}
			if ids = append(ids, rec.ID); len(ids) == 3 {
				break
			}
			next <- true
		}
		done <- ids
	}()
	select {
	case ids := <-done:
		if strings.Join(ids, ",") != "p0,p1,p2" {
			t.Fatalf("read %q", ids)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a record waited for more input, or the broken loop did not return")
	}
	close(next)
}

// Ensure that Record.Blank says whether a text holds nothing but white
// space, the same with SkipText (where Text is left empty, and the
// string is read as written) as without it, against strings.TrimSpace
// of the decoded text; and for CSV, whose reader fills Text.
func TestRecordBlank(t *testing.T) {
	texts := []string{"", " ", "\t\n\r ", "\u00a0\u3000", " x ", "a", "\u00e9", "  \u00a0b", strings.Repeat(" ", 300), strings.Repeat(" ", 300) + ".",
		// NB: format characters alone, blank to an nfkc index only
		// (BlankFormat; a multilingual user's U4), and beside a letter.
		"\u200b\u200b\u00ad", "\ufeff", "\u3000\u200d ", "\u200bx", "\u00ad-"}
	var jsonl, csvText strings.Builder
	cw := csv.NewWriter(&csvText)
	cw.Write([]string{"id", "text"})
	for i, text := range texts {
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprint(i), "text": text})
		jsonl.Write(b)
		jsonl.WriteByte('\n')
		cw.Write([]string{fmt.Sprint(i), text})
	}
	cw.Flush()
	// NB: one with escapes written out by hand: a tab and a no-break space.
	jsonl.WriteString(`{"id":"esc","text":"\t\u00a0 "}` + "\n")
	texts = append(texts, "\t\u00a0 ")
	dir := t.TempDir()
	in, inCSV := filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "b.csv")
	os.WriteFile(in, []byte(jsonl.String()), 0o644)
	os.WriteFile(inCSV, []byte(csvText.String()), 0o644)
	for _, c := range []struct {
		path string
		skip bool
		n    int
	}{{in, false, len(texts)}, {in, true, len(texts)}, {inCSV, false, len(texts) - 1}} {
		for _, format := range []bool{false, true} {
			i := 0
			for rec, err := range Read(context.Background(), []string{c.path}, nil, Options{SkipText: c.skip, BlankFormat: format}) {
				if err != nil {
					t.Fatalf("%s: %v", c.path, err)
				}
				// The oracle: the text the index shingles is empty.
				n := minhash.NormalizeFold
				if format {
					n = minhash.NormalizeNFKC
				}
				norm, _ := minhash.AppendNormalized(nil, texts[i], n)
				if want := len(norm) == 0; rec.Blank != want {
					t.Errorf("%s (SkipText %v, BlankFormat %v): record %d, text %q: Blank %v, want %v", c.path, c.skip, format, i, texts[i], rec.Blank, want)
				}
				i++
			}
			if i != c.n {
				t.Errorf("%s: %d records, want %d", c.path, i, c.n)
			}
		}
	}
}
