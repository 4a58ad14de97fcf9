package docio

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// cutReader returns its data in reads of the sizes cuts gives (each 1 to
// 256 bytes, round and round), so that a reader that may wait sends a
// chunk at every read: chunk boundaries fall anywhere in a line.
type cutReader struct {
	data []byte
	cuts []byte
	i    int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + len(r.data)
	if len(r.cuts) > 0 {
		n = 1 + int(r.cuts[r.i%len(r.cuts)])
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// FuzzReadJSONL checks the chunked JSON Lines reader (lines cut into
// chunks by one goroutine, parsed on every core, yielded in order)
// against oracleLines, which reads the same bytes line by line on one
// goroutine: the same records, bad records and positions, in the same
// order, whatever the lines (CR, CRLF, blank, over the record limit, no
// end on the last) and wherever a read ends. From a file and from a
// reader cut at the fuzzed sizes. (The parsing of one line is fuzzed
// against encoding/json by FuzzParseJSON.)
//
// NB: the input starts with a record of its own, so that no fuzzed
// first bytes read as a compression's magic, a byte order mark or
// UTF-16, which Read tells before the lines and the oracle does not.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\",\"text\":\"one\"}\n\n  \r\n{\"id\":2,\"text\":\"t\\n\"}\r\n{bad\n{\"id\":\"c\",\"text\":\"last\"}"), []byte{0, 3, 17}, uint16(0))
	f.Add([]byte("{\"id\":\"long\",\"text\":\"0123456789012345678901234567890123456789\"}\r\r\n\r{\"id\":\"x\",\"text\":\"y\"}\n"), []byte{1}, uint16(20))
	f.Add([]byte("\n\n\n{\"id\":\"a\"}\n{\"text\":\"no id\"}\n{\"id\":\"a\",\"text\":\"\"}\n"), []byte{255, 0}, uint16(64))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body, cuts []byte, limit uint16) {
		data := append([]byte("{\"id\":\"first\",\"text\":\"the first record\"}\n"), body...)
		o := Options{MaxRecordBytes: 40 + int(limit)}
		want := oracleLines("stdin", data, o)
		if got := readAll(t, nil, &cutReader{data: data, cuts: cuts}, o); !slices.Equal(got, want) {
			t.Fatalf("cut at %v: read\n%q\nwant\n%q", cuts, got, want)
		}
		path := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want = oracleLines(path, data, o)
		if got := readAll(t, []string{path}, nil, o); !slices.Equal(got, want) {
			t.Fatalf("from a file: read\n%q\nwant\n%q", got, want)
		}
	})
}
