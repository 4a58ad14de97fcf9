package docio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/lshdb/lshdb/internal/inflate"
)

// A gzip stream is one deflate stream per member, and a deflate stream
// can only be inflated from its start: one core's work (the 1.6 GB of
// text of a million generated documents took 8.8 CPU-s, the largest
// part of filter's pass over its inputs). A stream of many members whose
// headers say their lengths can be cut into members without inflating
// them and inflated on every core, each member whole, with no streaming
// state (internal/inflate: libdeflate with cgo; BenchmarkGzip measures
// it). That is BGZF, the "blocked gzip" of
// bgzip (samtools/htslib) and of lshdb gen, and of every gzip output
// lshdb writes: members of at most 64 KiB that inflate to at most 64 KiB,
// each header's extra field holding a "BC" subfield with the member's
// size less one (the SAM/BAM specification, section 4.1). Any gzip
// reader reads such a file as one stream (gzip -d, zcat, Python's gzip);
// lshdb reads it on every core.
//
// newGzipReader falls back to klauspost's sequential reader, from the
// member on, as soon as a member is not a plain BGZF one (no BC
// subfield, flags other than FTEXT and FEXTRA, another method, a size
// over 64 KiB either way), so a concatenation of a BGZF file and any
// other gzip file reads as gzip -d would read it. A BGZF member whose BC
// size disagrees with its deflate stream is corrupt, and refused as such
// (as htslib does; a sequential reader, which ignores the subfield, may
// read it).

const (
	bgzfMaxBlock = 64 << 10 // a member's size, header to trailer, and its text, at most
	// bgzfMaxInput is the text a writer puts in one member: htslib's
	// figure, which leaves room for deflate's stored-block overhead when
	// the text does not compress.
	bgzfMaxInput = 0xff00
	// bgzfBatch is the text a reader's job inflates at once, at most.
	bgzfBatch = 1 << 20
	// bgzfMaxWorkers caps the goroutines that inflate (and so the
	// batches in memory), as the JSON Lines parsers are capped.
	bgzfMaxWorkers = 8
)

// bgzfEOF is the empty member that ends a BGZF file (htslib checks for
// it to tell a complete file from a truncated one).
var bgzfEOF = []byte{
	0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0x00, 'B', 'C', 0x02, 0x00,
	0x1b, 0x00, 0x03, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
}

// bgzfHeader is the fixed part of a BGZF header and its extra field,
// when it holds no subfield but BC: 18 bytes.
const bgzfHeader = 18

// bgzfSize returns the size of the member that starts hdr and the length
// of its header, or ok false when hdr does not start a plain BGZF member
// (whole header in hdr, the method deflate, no flags but FTEXT and
// FEXTRA, a BC subfield of two bytes, a size from header to trailer).
func bgzfSize(hdr []byte) (size, hlen int, ok bool) {
	const ftext, fextra = 1 << 0, 1 << 2
	if len(hdr) < 12 || hdr[0] != 0x1f || hdr[1] != 0x8b || hdr[2] != 8 {
		return 0, 0, false
	}
	// NB: a name, a comment (whose length the sequential readers cap), a
	// header CRC and the reserved flags are left to the sequential
	// reader; bgzip writes none of them.
	if flg := hdr[3]; flg&fextra == 0 || flg&^(ftext|fextra) != 0 {
		return 0, 0, false
	}
	xlen := int(binary.LittleEndian.Uint16(hdr[10:]))
	if len(hdr) < 12+xlen {
		return 0, 0, false
	}
	for x := hdr[12 : 12+xlen]; len(x) >= 4; {
		slen := int(binary.LittleEndian.Uint16(x[2:]))
		if len(x) < 4+slen {
			return 0, 0, false
		}
		if x[0] == 'B' && x[1] == 'C' && slen == 2 {
			size = int(binary.LittleEndian.Uint16(x[4:])) + 1
		}
		x = x[4+slen:]
	}
	hlen = 12 + xlen
	if size == 0 || size < hlen+8 {
		return 0, 0, false
	}
	return size, hlen, true
}

// bgzfJob is a batch of whole members, inflated by one worker.
type bgzfJob struct {
	in   []byte        // the members, back to back
	ends []int         // where each member ends in in
	hlen []int         // each member's header length
	text int           // what they inflate to, by their trailers
	out  []byte        // what they inflate to
	err  error         // what went wrong after the members, or nil
	tail *bufio.Reader // not nil: the rest of the stream, read sequentially
	done chan struct{}
}

// bgzfReader inflates a BGZF stream on several cores, in order.
type bgzfReader struct {
	order   chan *bgzfJob // the jobs in stream order, as they are cut
	stop    chan struct{}
	once    sync.Once
	mayWait bool // pass each member on as soon as it is read
	cur     *bgzfJob
	off     int
	gz      *seqGzip // the sequential reader of a tail
	err     error
	// NB: buffers are reused through free lists, not a sync.Pool, which
	// each GC empties: reading 64 MB allocated and zeroed megabytes per
	// batch, and grew them by doubling (a third of the reader's CPU).
	freeIn, freeOut chan []byte
	// running counts the goroutines the reader started (tests wait for
	// them to end after Close).
	running sync.WaitGroup
}

// get returns a buffer of the free list, or a new one of capacity n.
func get(free chan []byte, n int) []byte {
	select {
	case b := <-free:
		if cap(b) >= n {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, n)
}

// put returns b to the free list, unless it is full.
func put(free chan []byte, b []byte) {
	select {
	case free <- b:
	default:
	}
}

// newGzipReader returns a reader of the gzip stream br starts with: on
// several cores when its first member is a BGZF one, else klauspost's
// reader (a quarter faster than compress/gzip's). br's buffer must hold
// a whole member (64 KiB). mayWait: br reads a pipe or the like, whose
// members are passed on as they arrive rather than in batches.
func newGzipReader(br *bufio.Reader, mayWait bool) (io.ReadCloser, error) {
	if _, _, ok, _ := bgzfMember(br); !ok || br.Size() < bgzfMaxBlock {
		return newSeqGzip(br, false)
	}
	workers := min(runtime.GOMAXPROCS(0), bgzfMaxWorkers)
	r := &bgzfReader{
		order:   make(chan *bgzfJob, 2*workers),
		stop:    make(chan struct{}),
		mayWait: mayWait,
		freeIn:  make(chan []byte, 4*workers),
		freeOut: make(chan []byte, 4*workers),
	}
	work := make(chan *bgzfJob, 2*workers)
	r.running.Go(func() { r.cut(br, work) })
	for range workers {
		r.running.Go(func() { r.inflate(work) })
	}
	return r, nil
}

// bgzfMember peeks at the member br starts with: the whole member and its
// header's length when it is a BGZF one (ok), else what br holds of it;
// err is a read error other than the end of the stream.
func bgzfMember(br *bufio.Reader) (m []byte, hlen int, ok bool, err error) {
	hdr, err := br.Peek(bgzfHeader)
	if err != nil && err != io.EOF {
		return hdr, 0, false, err
	}
	size, hlen, ok := bgzfSize(hdr)
	if !ok {
		return hdr, 0, false, nil
	}
	m, err = br.Peek(size)
	if err != nil && err != io.EOF {
		return m, 0, false, err
	}
	if len(m) < size || binary.LittleEndian.Uint32(m[size-4:]) > bgzfMaxBlock {
		// NB: a member cut short, or one that says it inflates to more
		// than BGZF allows (which would be a lie to allocate for): the
		// sequential reader judges it.
		return m, 0, false, nil
	}
	return m, hlen, true, nil
}

// cut reads whole members into batches and hands each to the workers
// and, in order, to Read; it ends with the stream, a read error, or a
// member that is not BGZF, which it hands over as the tail to read
// sequentially (the sequential reader then judges it: a cut member is
// io.ErrUnexpectedEOF).
func (r *bgzfReader) cut(br *bufio.Reader, work chan<- *bgzfJob) {
	defer close(work)
	defer close(r.order)
	var job *bgzfJob
	send := func() bool {
		if job == nil {
			return true
		}
		select {
		case r.order <- job:
		case <-r.stop:
			return false
		}
		select {
		case work <- job:
		case <-r.stop:
			return false
		}
		job = nil
		return true
	}
	// NB: whether the last member was the empty one that ends a BGZF
	// file: a file cut at a member's end (and a line's) read as whole,
	// and a build with --delete-missing deleted what the cut left out.
	// htslib checks the same.
	ended := true
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		m, hlen, ok, err := bgzfMember(br)
		if err == nil && len(m) == 0 && !ended {
			err = fmt.Errorf("%w: the BGZF stream ends without its end-of-file block", ErrTruncated)
		}
		if err != nil || len(m) == 0 {
			// NB: a read error (which Peek reports once) after the
			// members before it; else the end.
			if err != nil {
				if job == nil {
					job = &bgzfJob{done: make(chan struct{})}
				}
				job.err = err
			}
			send()
			return
		}
		ended = ok && bytes.Equal(m, bgzfEOF)
		if !ok {
			if !send() {
				return
			}
			job = &bgzfJob{tail: br, done: make(chan struct{})}
			close(job.done)
			select {
			case r.order <- job:
			case <-r.stop:
			}
			return
		}
		if job == nil {
			job = &bgzfJob{done: make(chan struct{}), in: get(r.freeIn, bgzfBatch/2)}
		}
		job.in = append(job.in, m...)
		job.ends = append(job.ends, len(job.in))
		job.hlen = append(job.hlen, hlen)
		job.text += int(binary.LittleEndian.Uint32(m[len(m)-4:]))
		br.Discard(len(m))
		if (job.text >= bgzfBatch-bgzfMaxBlock || r.mayWait && br.Buffered() == 0) && !send() {
			return
		}
	}
}

// inflate inflates the jobs it is given.
func (r *bgzfReader) inflate(work <-chan *bgzfJob) {
	z, zerr := inflate.New()
	if z != nil {
		defer z.Close()
	}
	for job := range work {
		// NB: the text's size is the trailers' sum, each at most 64 KiB
		// (cut checked).
		job.out = get(r.freeOut, job.text)
		if zerr != nil {
			job.err = zerr
			job.ends = nil
		}
		start := 0
		for i, end := range job.ends {
			m := job.in[start:end]
			start = end
			data, trailer := m[job.hlen[i]:len(m)-8], m[len(m)-8:]
			want, isize := binary.LittleEndian.Uint32(trailer), int(binary.LittleEndian.Uint32(trailer[4:]))
			n := len(job.out)
			job.out = job.out[:n+isize]
			err := z.Inflate(job.out[n:], data)
			switch {
			case errors.Is(err, inflate.ErrTooLong) || errors.Is(err, inflate.ErrTrailing):
				// NB: the member's deflate stream must end where its
				// trailer starts, as a sequential reader reads it.
				err = fmt.Errorf("%w: a BGZF member's data does not end where its size says", gzip.ErrHeader)
			case errors.Is(err, inflate.ErrTooShort):
				err = fmt.Errorf("%w: a BGZF member inflates to less than its trailer says", gzip.ErrChecksum)
			case err != nil:
				// NB: the whole member is in memory, so a stream that
				// runs out is not a truncated file but a damaged member.
				err = fmt.Errorf("gzip: a BGZF member's deflate data is damaged (or runs past the member's size): %w", err)
			case crc32.ChecksumIEEE(job.out[n:]) != want:
				err = gzip.ErrChecksum
			}
			if err != nil {
				job.out = job.out[:n]
				job.err = err // NB: replaces a read error after the members
				break
			}
		}
		put(r.freeIn, job.in)
		job.in = nil
		close(job.done)
	}
}

// Read reads inflated bytes in stream order.
func (r *bgzfReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.gz != nil {
			n, err := r.gz.Read(p)
			if err != nil {
				r.err = err
			}
			return n, err
		}
		if r.cur != nil && r.off < len(r.cur.out) {
			n := copy(p, r.cur.out[r.off:])
			r.off += n
			return n, nil
		}
		if r.cur != nil {
			if r.cur.err != nil {
				r.err = r.cur.err
				continue
			}
			put(r.freeOut, r.cur.out)
			r.cur = nil
		}
		job, ok := <-r.order
		if !ok {
			r.err = io.EOF
			continue
		}
		<-job.done
		if job.tail != nil {
			if padded, zeros := zeroPadding(job.tail); padded {
				r.err = io.EOF // NB: a padded BGZF file (zeroPadding)
				continue
			} else if zeros {
				r.err = trailingGarbage(1)
				continue
			}
			gz, err := newSeqGzip(job.tail, true)
			if err != nil {
				r.err = err
				continue
			}
			r.gz = gz
			continue
		}
		r.cur, r.off = job, 0
	}
}

// Close stops the goroutines (the one that cuts members stops before
// its next member; one blocked reading a pipe, when the read returns)
// and releases the reader.
func (r *bgzfReader) Close() error {
	r.once.Do(func() { close(r.stop) })
	if r.gz != nil {
		r.gz.Close()
	}
	if r.err == nil {
		r.err = errors.New("docio: read of a closed gzip stream")
	}
	return nil
}

// GzipWriter compresses to BGZF on several cores: members of at most
// 0xff00 bytes of input, compressed concurrently and written in order,
// ended by BGZF's empty member. Any gzip reader reads its output;
// lshdb's inflates it on every core. Members cost some ratio: 3.4% on
// the gcide corpus, 7.7% on a million generated documents, against one
// stream at the same level.
type GzipWriter struct {
	w        io.Writer
	level    int
	block    []byte
	order    chan *bgzfBlock
	work     chan *bgzfBlock
	wrote    chan struct{} // closed when the writing goroutine ends
	err      error         // the first write error, set before wrote closes
	mu       sync.Mutex
	free     chan []byte // members' input buffers, reused (see bgzfReader)
	closed   bool
	closeErr error // what Close returned, returned again
}

type bgzfBlock struct {
	in, out []byte
	done    chan struct{}
}

// NewGzipWriter returns a writer of BGZF to w at a compression level of
// compress/flate (flate.DefaultCompression, …); Close ends the stream and
// waits until everything is written to w (it does not close w).
func NewGzipWriter(w io.Writer, level int) (*GzipWriter, error) {
	if level < flate.HuffmanOnly || level > flate.BestCompression {
		return nil, fmt.Errorf("docio: gzip level %d out of range", level)
	}
	workers := min(runtime.GOMAXPROCS(0), bgzfMaxWorkers)
	g := &GzipWriter{
		w:     w,
		level: level,
		order: make(chan *bgzfBlock, 2*workers),
		work:  make(chan *bgzfBlock, 2*workers),
		wrote: make(chan struct{}),
		free:  make(chan []byte, 4*workers),
	}
	for range workers {
		go g.compress()
	}
	go g.write()
	return g, nil
}

// Write buffers p into members, handing each full one to the workers.
func (g *GzipWriter) Write(p []byte) (int, error) {
	if g.closed {
		return 0, errors.New("docio: write to a closed gzip writer")
	}
	n := len(p)
	for len(p) > 0 {
		if g.block == nil {
			g.block = get(g.free, bgzfMaxInput)
		}
		k := copy(g.block[len(g.block):bgzfMaxInput], p)
		g.block = g.block[:len(g.block)+k]
		p = p[k:]
		if len(g.block) == bgzfMaxInput {
			if err := g.send(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// send hands the current member to the workers and to the writer.
func (g *GzipWriter) send() error {
	g.mu.Lock()
	err := g.err
	g.mu.Unlock()
	if err != nil {
		return err
	}
	b := &bgzfBlock{in: g.block, done: make(chan struct{})}
	g.block = nil
	g.order <- b
	g.work <- b
	return nil
}

// compress compresses members.
func (g *GzipWriter) compress() {
	var fw *flate.Writer
	var buf bytes.Buffer
	for b := range g.work {
		for _, level := range []int{g.level, flate.NoCompression} {
			buf.Reset()
			buf.Write(bgzfEOF[:bgzfHeader]) // NB: its size is set below
			w := fw
			switch {
			case level != g.level:
				// NB: stored blocks always fit (htslib's bound); rare.
				w, _ = flate.NewWriter(&buf, level)
			case fw == nil:
				fw, _ = flate.NewWriter(&buf, level) // NB: level checked in NewGzipWriter
				w = fw
			default:
				fw.Reset(&buf)
			}
			w.Write(b.in) // NB: a bytes.Buffer's writes do not fail
			w.Close()
			buf.Write(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(b.in)))
			buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b.in))))
			if buf.Len() <= bgzfMaxBlock {
				break
			}
		}
		out := bytes.Clone(buf.Bytes())
		binary.LittleEndian.PutUint16(out[16:], uint16(len(out)-1))
		b.out = out
		put(g.free, b.in)
		b.in = nil
		close(b.done)
	}
}

// write writes the members in order; after a write error it drains the
// members without writing them.
func (g *GzipWriter) write() {
	defer close(g.wrote)
	var err error
	for b := range g.order {
		<-b.done
		if err == nil {
			_, err = g.w.Write(b.out)
			if err != nil {
				g.mu.Lock()
				g.err = err
				g.mu.Unlock()
			}
		}
	}
}

// Close compresses what is buffered, ends the stream with BGZF's empty
// member, waits until all is written to the underlying writer and
// returns the first write error.
func (g *GzipWriter) Close() error {
	if g.closed {
		return g.closeErr
	}
	g.closed = true
	var err error
	if len(g.block) > 0 {
		err = g.send()
	}
	close(g.work)
	close(g.order)
	<-g.wrote
	g.mu.Lock()
	if g.err != nil {
		err = g.err
	}
	g.mu.Unlock()
	if err == nil {
		_, err = g.w.Write(bgzfEOF)
	}
	g.closeErr = err
	return err
}

// seqGzip reads a gzip stream one member after another (klauspost's
// reader, one member at a time), so that bytes after a member that are
// not another member are called what they are: gzip -d calls them
// "trailing garbage". NB: klauspost's multistream reader read them as a
// member's header, and a few such bytes ("echo junk >> f.gz") were
// reported as a truncated file.
type seqGzip struct {
	br      *bufio.Reader
	gz      *gzip.Reader
	members int   // the members read whole
	err     error // sticky
}

// newSeqGzip starts reading br's members; after says whether members
// came before br's (the rest of a BGZF stream).
func newSeqGzip(br *bufio.Reader, after bool) (*seqGzip, error) {
	g := &seqGzip{br: br}
	if after {
		g.members = 1
		if err := g.garbage(); err != nil {
			return nil, err
		}
	}
	gz, err := gzip.NewReader(br)
	if err == io.EOF && after {
		// NB: garbage found a member's magic number: its header cut
		// short is a truncated file, not its end (it read as "abc" and
		// no error; found by FuzzGzipReader).
		if _, perr := br.Peek(1); perr != io.EOF {
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		return nil, err
	}
	gz.Multistream(false)
	g.gz = gz
	return g, nil
}

// garbage returns the error of bytes at br's start that cannot begin a
// member (after one: the first member's are gzip's own header error).
func (g *seqGzip) garbage() error {
	hdr, _ := g.br.Peek(2)
	if len(hdr) == 0 || len(hdr) == 2 && hdr[0] == 0x1f && hdr[1] == 0x8b {
		return nil
	}
	return g.garbageErr()
}

// garbageErr is the error of bytes after the members read that are not
// a member.
func (g *seqGzip) garbageErr() error { return trailingGarbage(g.members) }

// trailingGarbage is the error of bytes that are not a member after the
// members gzip members read.
func trailingGarbage(members int) error {
	what := fmt.Sprintf("the last of %d gzip members", members)
	if members == 1 {
		what = "the gzip member"
	}
	return fmt.Errorf("%w: bytes after %s are not gzip (trailing garbage: was the file appended to?)", gzip.ErrHeader, what)
}

func (g *seqGzip) Read(p []byte) (int, error) {
	for g.err == nil {
		n, err := g.gz.Read(p)
		if err != io.EOF {
			if err != nil {
				g.err = err
			}
			return n, err
		}
		g.members++
		if _, perr := g.br.Peek(1); perr == io.EOF {
			g.err = io.EOF
		} else if padded, zeros := zeroPadding(g.br); padded {
			g.err = io.EOF
		} else if zeros {
			g.err = g.garbageErr() // NB: zeros, then a member: gzip -d stops at the zeros
		} else if gerr := g.garbage(); gerr != nil {
			g.err = gerr
		} else if rerr := g.gz.Reset(g.br); rerr != nil {
			if rerr == io.EOF {
				// NB: a member's magic number was read (garbage): its
				// header cut short is a truncated file, not its end.
				rerr = io.ErrUnexpectedEOF
			}
			g.err = rerr
		} else {
			g.gz.Multistream(false)
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, g.err
}

func (g *seqGzip) Close() error { return g.gz.Close() }

// zeroPadding reports whether br holds zero bytes only, to its end, as a
// tape or a block-sized copy pads a gzip file: gzip -d ignores them (it
// was refused as trailing garbage). It reads the zeros it meets; zeros
// says it met some. Zeros and then other bytes are trailing garbage, a
// member among them too, where gzip -d stops.
//
// NB: a member after zeros was read as the next one, where gzip -d and
// klauspost's reader stop (found by FuzzGzipReader).
func zeroPadding(br *bufio.Reader) (padded, zeros bool) {
	if b, _ := br.Peek(1); len(b) == 0 || b[0] != 0 {
		return false, false
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return true, true
		}
		if err != nil {
			return false, true
		}
		if c != 0 {
			br.UnreadByte()
			return false, true
		}
	}
}
