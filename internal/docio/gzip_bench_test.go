package docio_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/docio"
)

// BenchmarkGzip compares BGZF (docio.GzipWriter's output, inflated on
// every core) with one gzip stream (klauspost's, inflated on one) on the
// same text, in the same loop: the shared gcide corpus's JSON Lines
// (about 40 MB; the 548 KB debian sample when ../shared is absent),
// repeated to at least 64 MB. It reports each way's MB/s of text read
// and written, x-read and x-write (BGZF's speed over one stream's) and
// x-size (BGZF's compressed size over one stream's).
//
//	go test -run '^$' -bench Gzip -benchtime 5x ./internal/docio/
func BenchmarkGzip(b *testing.B) {
	var text []byte
	dir, err := corpus.SharedDir("gcide")
	switch {
	case err == nil:
		f, err := os.Open(filepath.Join(dir, "docs.jsonl.gz"))
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		if text, err = io.ReadAll(zr); err != nil {
			b.Fatal(err)
		}
		f.Close()
	case errors.Is(err, corpus.ErrNoShared):
		if text, err = os.ReadFile(filepath.Join("..", "..", "testdata", "corpora", "debian-sample", "docs.jsonl")); err != nil {
			b.Fatal(err)
		}
	default:
		b.Fatal(err)
	}
	for len(text) < 64<<20 {
		text = append(text, text...)
	}
	var stream, bgzf bytes.Buffer
	var wStream, wBGZF, rStream, rBGZF time.Duration
	for b.Loop() {
		stream.Reset()
		start := time.Now()
		zw, _ := gzip.NewWriterLevel(&stream, gzip.DefaultCompression)
		zw.Write(text)
		zw.Close()
		wStream += time.Since(start)

		bgzf.Reset()
		start = time.Now()
		gw, err := docio.NewGzipWriter(&bgzf, flate.DefaultCompression)
		if err != nil {
			b.Fatal(err)
		}
		gw.Write(text)
		if err := gw.Close(); err != nil {
			b.Fatal(err)
		}
		wBGZF += time.Since(start)

		for _, c := range []struct {
			z *bytes.Buffer
			t *time.Duration
		}{{&stream, &rStream}, {&bgzf, &rBGZF}} {
			start = time.Now()
			r, err := docio.NewGzipReader(bufio.NewReaderSize(bytes.NewReader(c.z.Bytes()), 64<<10), false)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, r)
			r.Close()
			if err != nil || n != int64(len(text)) {
				b.Fatalf("read %d of %d bytes: %v", n, len(text), err)
			}
			*c.t += time.Since(start)
		}
	}
	mb := float64(b.N) * float64(len(text)) / 1e6
	b.ReportMetric(mb/rStream.Seconds(), "read-stream-MB/s")
	b.ReportMetric(mb/rBGZF.Seconds(), "read-bgzf-MB/s")
	b.ReportMetric(rStream.Seconds()/rBGZF.Seconds(), "x-read")
	b.ReportMetric(mb/wStream.Seconds(), "write-stream-MB/s")
	b.ReportMetric(mb/wBGZF.Seconds(), "write-bgzf-MB/s")
	b.ReportMetric(wStream.Seconds()/wBGZF.Seconds(), "x-write")
	b.ReportMetric(float64(bgzf.Len())/float64(stream.Len()), "x-size")
}
