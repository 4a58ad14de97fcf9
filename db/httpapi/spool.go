package httpapi

import (
	"context"
	"fmt"
	"iter"
	"os"
	"runtime"
	"sync"
)

// A spooled stream is an answer read from one snapshot (GET /v1/scan)
// and sent as fast as its client reads: its lines are made on a
// goroutine of their own as fast as the snapshot can be read, into a
// spool that holds spoolMemBytes in memory and the rest in a temporary
// file, and the handler sends them from the spool. The snapshot is
// released once the last line is made, however slowly the client reads.
//
// NB: the snapshot was held until the client had read the last line: a
// client reading 16 KB/s (never cut by the write timeout, which bounds
// each write) held it for the hour a 60 MB scan took, and four such
// scans beside a writer took an index from 63 MB to 456 MB on disk (a
// review of serve, SV3-1): a snapshot keeps every table the compactions
// replace after it was taken. A spool holds at most the answer's bytes,
// once, whatever the writers do.

// spoolMemBytes is the most of a spooled stream's lines held in memory:
// a client that keeps up never makes its file; one that lags has the
// rest written to the file.
const spoolMemBytes = 256 << 10

// spoolChunkBytes is the size at which the maker queues its lines.
const spoolChunkBytes = 32 << 10

// spool is the queue between a spooled stream's maker (one goroutine)
// and its sender (the handler).
type spool struct {
	dir   string        // where the file is made ("": the system's temporary directory)
	ready chan struct{} // a chunk queued, or the maker ended (capacity 1)

	mu     sync.Mutex
	chunks []spoolChunk // queued, in order
	mem    int          // bytes of the queued chunks held in memory
	ended  bool         // the maker is done
	err    error        // what ended the maker, if not the end of the answer

	// The file, the maker's to write (at off) and the sender's to read:
	// written and read at offsets, without the lock.
	f   *os.File
	off int64
}

// spoolChunk is a queued run of lines: in memory (b), or in the file.
type spoolChunk struct {
	b      []byte
	off, n int64
}

func newSpool(dir string) *spool { return &spool{dir: dir, ready: make(chan struct{}, 1)} }

func (s *spool) wake() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// push queues b, which the spool keeps (the caller makes a new one).
func (s *spool) push(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	s.mu.Lock()
	inMem := s.mem+len(b) <= spoolMemBytes
	if inMem {
		s.chunks = append(s.chunks, spoolChunk{b: b})
		s.mem += len(b)
	}
	s.mu.Unlock()
	if !inMem {
		if s.f == nil {
			if err := s.create(); err != nil {
				return err
			}
		}
		if _, err := s.f.WriteAt(b, s.off); err != nil {
			return fmt.Errorf("the spool of a stream read ahead of its client: %w", err)
		}
		s.mu.Lock()
		s.chunks = append(s.chunks, spoolChunk{off: s.off, n: int64(len(b))})
		s.mu.Unlock()
		s.off += int64(len(b))
	}
	s.wake()
	return nil
}

// create makes the spool's file in s.dir, or else in the system's
// temporary directory; where the system allows it, the file is removed
// at once (it lives as long as it is open, and no crash leaves it).
func (s *spool) create() error {
	f, err := os.CreateTemp(s.dir, ".lshdb-stream-*.tmp")
	if err != nil && s.dir != "" {
		f, err = os.CreateTemp("", ".lshdb-stream-*.tmp")
	}
	if err != nil {
		return fmt.Errorf("the spool of a stream read ahead of its client: %w", err)
	}
	if runtime.GOOS != "windows" {
		_ = os.Remove(f.Name())
	}
	s.f = f
	return nil
}

// end says that the maker is done; err is what ended it if not the end
// of the answer.
func (s *spool) end(err error) {
	s.mu.Lock()
	s.ended, s.err = true, err
	s.mu.Unlock()
	s.wake()
}

// next returns the next chunk, if one is queued; otherwise whether the
// maker ended (and with which error).
func (s *spool) next() (c spoolChunk, ok, ended bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.chunks) > 0 {
		c = s.chunks[0]
		s.chunks[0] = spoolChunk{}
		s.chunks = s.chunks[1:]
		s.mem -= len(c.b)
		return c, true, false, nil
	}
	return spoolChunk{}, false, s.ended, s.err
}

// close closes and removes the file, if one was made.
func (s *spool) close() {
	if s.f != nil {
		name := s.f.Name()
		_ = s.f.Close()
		if runtime.GOOS == "windows" {
			_ = os.Remove(name)
		}
	}
}

// spoolMade, when a test sets it, is called when a spooled stream's
// maker has made its last line (its snapshot released).
var spoolMade func()

// spooledStream is stream for seq, an answer read from one snapshot (see
// spool): the lines of out(v) for each value, then end(n). dir is where
// the spool's file is made (the index's directory). As stream, an error
// before the first line is the request's (a status of its own), and one
// after it the stream's last line.
func spooledStream[T any](w *resp, ctx context.Context, seq func(context.Context) iter.Seq2[T, error], out func(T) any, end func(n int) any, dir string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newSpool(dir)
	var made sync.WaitGroup
	defer func() {
		cancel() // NB: the maker stops at its next value: the client went away
		made.Wait()
		s.close()
	}()
	made.Go(func() {
		n := 0
		cur := make([]byte, 0, spoolChunkBytes+4<<10)
		fail := func(err error) {
			if perr := s.push(cur); perr != nil && err == nil {
				err = perr
			}
			s.end(err)
		}
		for v, err := range seq(ctx) {
			if err != nil {
				fail(err)
				return
			}
			buf, err := marshal(out(v))
			if err != nil {
				fail(err)
				return
			}
			cur = append(cur, buf.Bytes()...)
			putBuffer(buf)
			n++
			if len(cur) >= spoolChunkBytes || n%streamLines == 0 {
				if err := s.push(cur); err != nil {
					s.end(err)
					return
				}
				cur = make([]byte, 0, spoolChunkBytes+4<<10)
			}
		}
		buf, err := marshal(end(n))
		if err != nil {
			fail(err)
			return
		}
		cur = append(cur, buf.Bytes()...)
		putBuffer(buf)
		fail(nil)
		if spoolMade != nil {
			spoolMade()
		}
	})
	var fileBuf []byte
	for {
		// NB: no wait on ctx: the maker ends when it does, saying why.
		<-s.ready
		for {
			c, ok, ended, err := s.next()
			if !ok {
				if !ended {
					if w.started {
						if err := w.flush(); err != nil {
							return err
						}
					}
					break // NB: wait for the next chunk
				}
				if err != nil {
					if !w.started {
						return err // NB: nothing sent: the request's error
					}
					w.failLine(err)
					return err
				}
				return w.flush() // NB: the end line was queued last
			}
			if err := ctx.Err(); err != nil {
				// NB: the client went away, or the server cuts its
				// streams as it stops, after the maker was done.
				if w.started {
					w.failLine(err)
				}
				return err
			}
			if !w.started {
				w.startStream()
			}
			b := c.b
			if b == nil {
				if int64(cap(fileBuf)) < c.n {
					fileBuf = make([]byte, c.n)
				}
				b = fileBuf[:c.n]
				if _, err := s.f.ReadAt(b, c.off); err != nil {
					err = fmt.Errorf("the spool of a stream read ahead of its client: %w", err)
					w.failLine(err)
					return err
				}
			}
			if _, err := w.bw.Write(b); err != nil {
				return err
			}
		}
	}
}
