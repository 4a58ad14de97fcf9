package docio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchInput writes 100,000 JSON Lines documents of about 300 bytes; one
// in two has escapes in its text (a quote, a line end) and a nested meta
// field after it.
func benchInput(b *testing.B) (string, int64) {
	var buf bytes.Buffer
	for i := range 100000 {
		text := strings.Repeat(fmt.Sprintf("word%d ", i%97), 40)
		if i%2 == 0 {
			text = `a "quoted" title` + "\n" + text
		}
		fmt.Fprintf(&buf, "{\"id\":\"doc-%d\",\"text\":%q,\"meta\":{\"n\":%d,\"tags\":[\"x\",\"y\"]}}\n", i, text, i)
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path, int64(buf.Len())
}

// BenchmarkRead reads JSON Lines through Read.
func BenchmarkRead(b *testing.B) {
	path, size := benchInput(b)
	b.SetBytes(size)
	for b.Loop() {
		n := 0
		for _, err := range Read(context.Background(), []string{path}, nil, Options{}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 100000 {
			b.Fatal(n)
		}
	}
}

// BenchmarkReadBaseline is the reader Read replaced: ReadBytes with no
// cap, the line into a map of raw fields, the id and text decoded.
func BenchmarkReadBaseline(b *testing.B) {
	path, size := benchInput(b)
	b.SetBytes(size)
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		n := 0
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m map[string]json.RawMessage
				var id, text string
				if json.Unmarshal(line, &m) != nil || json.Unmarshal(m["id"], &id) != nil || json.Unmarshal(m["text"], &text) != nil {
					b.Fatal("bad line")
				}
				n++
			}
			if err == io.EOF {
				break
			}
		}
		f.Close()
		if n != 100000 {
			b.Fatal(n)
		}
	}
}
