package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/schollz/progressbar/v3"
)

// prefetch reads filter's inputs while the clustering runs, into a
// temporary file of s2-compressed frames, so that the pass that writes the
// outputs reads no input again: the inputs' decompression and parsing
// (one core's work for gzip) run beside the clustering, which leaves part
// of the cores idle, instead of after it. A bad input is found at once and
// stops the clustering.
//
// NB: on 1M generated documents (gzip JSON Lines, 1.6 GB of text) the
// pass after the clustering read the inputs again in 10–16 s, a third of
// the time of pairs; the spill file is about a third of the text's size.
//
// Parquet inputs are not prefetched (a row is not bytes to copy): they
// are read after the clustering, as without the prefetch.
type prefetch struct {
	f    *os.File
	bw   *bufio.Writer
	zw   *s2.Writer
	srcs []docio.Source
	// records are the records spilled; buf a frame being made.
	records int64
	buf     []byte
	done    chan struct{}
	err     error // when done is closed: nil, errNoPrefetch or the failure
}

// errNoPrefetch: an input is Parquet; the inputs are read after the
// clustering instead.
var errNoPrefetch = errors.New("filter: a Parquet input is read after the clustering")

// Frame kinds of the spill file.
const (
	frameSource byte = iota // uvarint: the index of the input's Source
	frameRecord             // uvarint line, id, raw, end
	frameBad                // uvarint line, raw, end
)

// startPrefetch starts reading paths into a spill file; an input's
// failure cancels ctx (through cancel) with it, so that the clustering
// stops. The caller MUST call close.
func (a *app) startPrefetch(ctx context.Context, cancel context.CancelCauseFunc, paths []string, in *inputFlags) (*prefetch, error) {
	f, err := os.CreateTemp("", "lshdb-filter-*.s2")
	if err != nil {
		return nil, fmt.Errorf("filter's spill file: %w", err)
	}
	p := &prefetch{f: f, done: make(chan struct{})}
	p.bw = bufio.NewWriterSize(f, 1<<20)
	p.zw = s2.NewWriter(p.bw, s2.WriterConcurrency(1))
	go func() {
		defer close(p.done)
		p.err = p.run(ctx, paths, in, a.stdin)
		if p.err != nil && !errors.Is(p.err, errNoPrefetch) {
			cancel(p.err)
		}
	}()
	return p, nil
}

// run spills the records of paths.
func (p *prefetch) run(ctx context.Context, paths []string, in *inputFlags, stdin io.Reader) error {
	o := readOptions(in, func(src docio.Source) error {
		if src.Format == "parquet" {
			return errNoPrefetch
		}
		p.srcs = append(p.srcs, src)
		p.buf = binary.AppendUvarint(append(p.buf[:0], frameSource), uint64(len(p.srcs)-1))
		return p.write()
	})
	for r, err := range docio.Read(ctx, paths, stdin, o) {
		var re *docio.RecordError
		switch {
		case errors.As(err, &re):
			if re.Raw == nil {
				return fmt.Errorf("%w: %v", errUncopyable, re)
			}
			p.buf = binary.AppendUvarint(append(p.buf[:0], frameBad), uint64(re.Line))
			p.buf = appendBytes(p.buf, re.Raw)
			p.buf = append(p.buf, endCode(re.End))
		case err != nil:
			return err
		default:
			p.buf = binary.AppendUvarint(append(p.buf[:0], frameRecord), uint64(r.Line))
			p.buf = appendBytes(p.buf, []byte(r.ID))
			p.buf = appendBytes(p.buf, r.Raw)
			p.buf = append(p.buf, endCode(r.End))
		}
		p.records++
		if err := p.write(); err != nil {
			return err
		}
	}
	if err := p.zw.Close(); err != nil {
		return fmt.Errorf("filter's spill file: %w", err)
	}
	if err := p.bw.Flush(); err != nil {
		return fmt.Errorf("filter's spill file: %w", err)
	}
	return nil
}

func (p *prefetch) write() error {
	if _, err := p.zw.Write(p.buf); err != nil {
		return fmt.Errorf("filter's spill file: %w", err)
	}
	return nil
}

// wait waits until the inputs are spilled, and returns run's error.
func (p *prefetch) wait() error {
	<-p.done
	return p.err
}

// close removes the spill file (after wait).
func (p *prefetch) close() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// replay sends the spilled records to f, with a bar of the records on a
// terminal.
func (a *app) replay(p *prefetch, f *filterer) error {
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("filter's spill file: %w", err)
	}
	br := bufio.NewReaderSize(s2.NewReader(bufio.NewReaderSize(p.f, 1<<20)), 1<<20)
	add := func(int64) {}
	if a.stderrIsTerminal() {
		bar := progressbar.NewOptions64(p.records, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription("filter: writing"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		add = func(n int64) { bar.Add64(n) }
		defer bar.Finish()
	}
	var id, raw []byte
	file := ""
	corrupt := func(err error) error {
		return fmt.Errorf("filter's spill file %s: %w", p.f.Name(), err)
	}
	for i := int64(0); ; i++ {
		if i%4096 == 0 {
			if err := a.ctx.Err(); err != nil {
				return err
			}
			add(min(4096, p.records-i))
		}
		kind, err := br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return corrupt(err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return corrupt(err)
		}
		switch kind {
		case frameSource:
			if n >= uint64(len(p.srcs)) {
				return corrupt(fmt.Errorf("input %d of %d", n, len(p.srcs)))
			}
			file = p.srcs[n].Name
			if err := f.begin(p.srcs[n]); err != nil {
				return err
			}
			i-- // NB: not a record
			continue
		case frameRecord:
			if id, err = readBytes(br, id); err != nil {
				return corrupt(err)
			}
		case frameBad:
		default:
			return corrupt(fmt.Errorf("frame kind %d", kind))
		}
		if raw, err = readBytes(br, raw); err != nil {
			return corrupt(err)
		}
		e, err := br.ReadByte()
		if err != nil || int(e) >= len(lineEndCodes) {
			return corrupt(fmt.Errorf("line end %d: %v", e, err))
		}
		rec := record{raw: raw, end: lineEndCodes[e], file: file, line: int(n)}
		if kind == frameBad {
			err = f.bad(rec)
		} else {
			err = f.take(string(id), rec)
		}
		if err != nil {
			return err
		}
	}
	f.n.clusters = len(f.clusters)
	return nil
}

// lineEndCodes are the line ends by their code in a frame.
var lineEndCodes = [3]string{"", "\n", "\r\n"}

func endCode(end string) byte {
	switch end {
	case "\n":
		return 1
	case "\r\n":
		return 2
	}
	return 0
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func readBytes(br *bufio.Reader, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return buf, err
	}
	if n > 1<<31 {
		return buf, fmt.Errorf("a frame of %d bytes", n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(br, buf)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return buf, err
}
