package docio

import (
	"errors"
	"io"
	"sync"
)

// AsyncWriter is a buffered writer whose writes to the underlying writer
// happen on a goroutine of their own: while one buffer is written (a
// write system call, which copies it into the page cache), the caller
// fills the next. A command that reads records, decides their fate and
// copies most of them out (lshdb filter) spends as long in its write
// calls as in the rest of its pass; with an AsyncWriter the two overlap.
//
// The first error of the underlying writer is returned by every later
// Write and by Flush; what was buffered after it is dropped. An
// AsyncWriter is not safe for concurrent use (as bufio.Writer); Close
// must be called to end its goroutine, whether or not the output is
// wanted.
type AsyncWriter struct {
	w    io.Writer     // the underlying writer
	buf  []byte        // the buffer being filled
	size int           // a buffer's size: a full one is handed on
	full chan []byte   // buffers to write, to the goroutine
	free chan []byte   // written buffers, back from it
	done chan struct{} // closed when the goroutine ends

	mu     sync.Mutex
	err    error // the underlying writer's first error
	closed bool
}

// asyncBuffers is how many buffers an AsyncWriter has: one filled while
// the other is written.
const asyncBuffers = 2

// NewAsyncWriter returns an AsyncWriter over w with buffers of size bytes.
func NewAsyncWriter(w io.Writer, size int) *AsyncWriter {
	size = max(size, 4096)
	a := &AsyncWriter{
		w:    w,
		buf:  make([]byte, 0, size),
		size: size,
		full: make(chan []byte, asyncBuffers),
		free: make(chan []byte, asyncBuffers),
		done: make(chan struct{}),
	}
	for range asyncBuffers - 1 {
		a.free <- make([]byte, 0, size)
	}
	go a.run(w)
	return a
}

// run writes the buffers handed to it, in order, until full is closed.
func (a *AsyncWriter) run(w io.Writer) {
	defer close(a.done)
	for b := range a.full {
		if a.Err() == nil && len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		a.free <- b[:0]
	}
}

// Err is the underlying writer's first error, or nil.
func (a *AsyncWriter) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// errAsyncClosed is the error of a write to a closed AsyncWriter.
var errAsyncClosed = errors.New("docio: write to a closed AsyncWriter")

// Write buffers p, handing the buffer to the writing goroutine when full;
// a p as large as a buffer is written through on the caller's goroutine
// once the buffers are written (the goroutine is idle then). Its error is
// the underlying writer's first, if there was one.
func (a *AsyncWriter) Write(p []byte) (int, error) {
	if a.closed {
		return 0, errAsyncClosed
	}
	if err := a.Err(); err != nil {
		return 0, err
	}
	if len(p) >= a.size {
		// NB: a write as large as a buffer (a record of many megabytes)
		// goes straight through once what is buffered is written: copied
		// into a buffer it would grow that buffer to its size for good.
		if err := a.Flush(); err != nil {
			return 0, err
		}
		n, err := a.w.Write(p)
		if err != nil {
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
		}
		return n, err
	}
	a.buf = append(a.buf, p...)
	if len(a.buf) >= a.size {
		a.full <- a.buf
		a.buf = <-a.free
	}
	return len(p), nil
}

// Flush writes everything buffered and waits until it is written; it
// returns the underlying writer's first error.
func (a *AsyncWriter) Flush() error {
	if a.closed {
		return errAsyncClosed
	}
	a.full <- a.buf
	// NB: every buffer back means every write done (the goroutine sets
	// an error before it returns its buffer).
	bufs := make([][]byte, 0, asyncBuffers)
	for range asyncBuffers {
		bufs = append(bufs, <-a.free)
	}
	a.buf = bufs[0]
	for _, b := range bufs[1:] {
		a.free <- b
	}
	return a.Err()
}

// Close ends the writing goroutine after the buffers already handed to
// it; what is still buffered is dropped (Flush first to keep it). It
// returns the underlying writer's first error.
func (a *AsyncWriter) Close() error {
	if !a.closed {
		a.closed = true
		close(a.full)
		<-a.done
	}
	return a.Err()
}
