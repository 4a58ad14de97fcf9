package httpapi

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sync/semaphore"
)

// A spooled stream is a streamed answer (GET /v1/scan, /v1/pairs,
// /v1/pairs/groups) sent as fast as its client reads: its lines are made
// on a goroutine of their own as fast as the index can be read, into a
// spool that holds spoolMemBytes in memory and the rest in a temporary
// file, and the handler sends them from the spool. What the making holds
// (a scan's snapshot, a pairs run's place among MaxRuns) is released
// once the last line is made, however slowly the client reads.
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
//
// Its file holds what the memory does not, within a budget shared by the
// server's scans (Options.MaxSpoolBytes) and while the index's filesystem
// has more than its reserve free (db.DB.RoomToWrite); past either, or
// when the file cannot be made or written, the maker waits for the
// sender to take what is queued, holding its snapshot, as a scan did
// before it had a spool. NB: with no bound, four clients that never read
// a scan with its sets (22 times the index's bytes on disk) had the spool
// hold 2 GB beside a 23 MB index, unseen by du (a read-through, RT12-1),
// and a spool that could not write failed its scan (RT12-3).
type spool struct {
	spoolOpts
	ready   chan struct{} // a chunk queued, or the maker ended (capacity 1)
	drained chan struct{} // the sender took a chunk (capacity 1)
	noFile  bool          // the maker's: the file cannot be made or written

	mu     sync.Mutex
	chunks []spoolChunk // queued, in order
	mem    int          // bytes of the queued chunks held in memory
	ended  bool         // the maker is done
	err    error        // what ended the maker, if not the end of the answer
	// inFile are the bytes of the file's chunks queued or being read:
	// at 0 the maker may empty the file and begin it again.
	inFile int64

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

// spoolOpts say where a spool's file goes and what bounds it.
type spoolOpts struct {
	dir    string              // where the file is made ("": the system's temporary directory)
	budget *semaphore.Weighted // the bytes of the server's spool files (nil: no file)
	room   func(n int64) bool  // whether the filesystem has room for n more bytes (nil: yes)
}

func newSpool(o spoolOpts) *spool {
	return &spool{spoolOpts: o, ready: make(chan struct{}, 1), drained: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *spool) wake() { signal(s.ready) }

// push queues b, which the spool keeps (the caller makes a new one): in
// memory while there is room, else in the file while the budget and the
// filesystem allow, else once the sender has taken enough of what is
// queued (an error only when ctx ends meanwhile).
func (s *spool) push(ctx context.Context, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	for {
		s.mu.Lock()
		inMem := s.mem+len(b) <= spoolMemBytes || len(s.chunks) == 0
		if inMem {
			s.chunks = append(s.chunks, spoolChunk{b: b})
			s.mem += len(b)
		}
		s.mu.Unlock()
		if inMem || s.toFile(b) {
			s.wake()
			return nil
		}
		select {
		case <-s.drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// toFile queues b in the file if the budget and the filesystem have room
// for it, and reports whether it did. The budget counts the file's size:
// the file is emptied (and its budget given back) whenever the sender
// has read all of it.
func (s *spool) toFile(b []byte) bool {
	n := int64(len(b))
	if s.noFile || s.budget == nil {
		return false
	}
	s.mu.Lock()
	empty := s.inFile == 0
	s.mu.Unlock()
	if empty && s.off > 0 {
		// NB: no chunk of the file is queued or being read, and only the
		// maker queues them.
		if err := s.f.Truncate(0); err != nil {
			s.noFile = true
			return false
		}
		s.budget.Release(s.off)
		s.off = 0
	}
	if s.room != nil && !s.room(n) || !s.budget.TryAcquire(n) {
		return false
	}
	if s.f == nil {
		if err := s.create(); err != nil {
			s.noFile = true
			s.budget.Release(n)
			return false
		}
	}
	if _, err := s.f.WriteAt(b, s.off); err != nil {
		// NB: a full disk, a file size limit: the maker waits for its
		// client instead (RT12-3: the scan failed as internal).
		s.noFile = true
		s.budget.Release(n)
		return false
	}
	s.mu.Lock()
	s.chunks = append(s.chunks, spoolChunk{off: s.off, n: n})
	s.inFile += n
	s.mu.Unlock()
	s.off += n
	return true
}

// taken says that the sender took c from the queue (and read it, from the
// file): a maker waiting for room wakes.
func (s *spool) taken(c spoolChunk) {
	if c.b == nil {
		s.mu.Lock()
		s.inFile -= c.n
		s.mu.Unlock()
	}
	signal(s.drained)
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
		if s.off > 0 {
			s.budget.Release(s.off)
		}
	}
}

// spoolMade, when a test sets it, is called when a spooled stream's
// maker has made its last line (its snapshot released).
var spoolMade func()

// removeDeadSpools removes the spool files a process left in dir: where
// the system cannot remove an open file (Windows), a spool's file is
// removed when its stream ends, and a process that ended first left it
// (a read-through, RT12-7). A live spool's file cannot be removed there,
// and has no name elsewhere.
func removeDeadSpools(dir string) {
	if dir == "" {
		return
	}
	names, _ := filepath.Glob(filepath.Join(dir, ".lshdb-stream-*.tmp"))
	for _, name := range names {
		_ = os.Remove(name)
	}
}

// spooledStream answers with seq's values as JSON Lines, each as out
// makes it, then the end line end(n) of n lines, through a spool (see
// spool) of options o. An error before the first line is the answer's
// (a status of its own); after it, an error line ends the stream.
//
// made, if not nil, is called once the maker is done (the snapshot
// released): the stream's place among MaxScans or MaxRuns is given back
// then, not once a slow client has read the rest (a read-through,
// RT12-4).
func spooledStream[T any](w *resp, ctx context.Context, seq func(context.Context) iter.Seq2[T, error], out func(T) any, end func(n int) any, o spoolOpts, made func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newSpool(o)
	var maker sync.WaitGroup
	defer func() {
		cancel() // NB: the maker stops at its next value: the client went away
		maker.Wait()
		s.close()
	}()
	maker.Go(func() {
		if made != nil {
			defer made()
		}
		n := 0
		cur := make([]byte, 0, spoolChunkBytes+4<<10)
		// finish queues the lines made, and ends the maker (err: why,
		// if not at the answer's end).
		finish := func(err error) {
			if perr := s.push(ctx, cur); perr != nil && err == nil {
				err = perr
			}
			s.end(err)
		}
		defer func() {
			// NB: the maker reads the index off the handler's goroutine,
			// whose recover (ServeHTTP's) does not see its panics: one
			// ended the server (a read-through, RT12-2).
			if p := recover(); p != nil {
				// NB: the lines made are sent, then the error line.
				finish(fmt.Errorf("%w: panic while making the answer: %v", ErrInternal, p))
			}
		}()
		for v, err := range seq(ctx) {
			if err != nil {
				finish(err)
				return
			}
			buf, err := marshal(out(v))
			if err != nil {
				finish(err)
				return
			}
			cur = append(cur, buf.Bytes()...)
			putBuffer(buf)
			n++
			if len(cur) >= spoolChunkBytes || n%streamLines == 0 {
				if err := s.push(ctx, cur); err != nil {
					s.end(err)
					return
				}
				cur = make([]byte, 0, spoolChunkBytes+4<<10)
			}
		}
		buf, err := marshal(end(n))
		if err != nil {
			finish(err)
			return
		}
		cur = append(cur, buf.Bytes()...)
		putBuffer(buf)
		finish(nil)
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
					s.taken(c)
					err = fmt.Errorf("the spool of a stream read ahead of its client: %w", err)
					w.failLine(err)
					return err
				}
			}
			s.taken(c)
			if _, err := w.bw.Write(b); err != nil {
				return err
			}
		}
	}
}
