package docio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// slowSink records what reaches it, a write at a time, and fails once it
// has taken failAt bytes (never when failAt is 0).
type slowSink struct {
	mu     sync.Mutex
	got    bytes.Buffer
	writes int
	failAt int
}

var errSinkFull = errors.New("sink full")

func (s *slowSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.failAt > 0 && s.got.Len()+len(p) > s.failAt {
		n := s.failAt - s.got.Len()
		s.got.Write(p[:n])
		return n, errSinkFull
	}
	return s.got.Write(p)
}

func (s *slowSink) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.got.Bytes())
}

// Ensure that what is written comes out whole and in order, whatever the
// sizes of the writes (smaller and larger than a buffer), with flushes
// between them: the oracle is the same bytes appended to one slice.
func TestAsyncWriterOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{4096, 10000} {
		var sink slowSink
		a := NewAsyncWriter(&sink, size)
		var want []byte
		for i := range 2000 {
			n := rng.IntN(300)
			if i%97 == 0 {
				n = 3*size + rng.IntN(size) // NB: larger than a buffer
			}
			p := make([]byte, n)
			for k := range p {
				p[k] = byte(rng.Uint32())
			}
			want = append(want, p...)
			if m, err := a.Write(p); m != n || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
			}
			if i%500 == 499 {
				if err := a.Flush(); err != nil {
					t.Fatal(err)
				}
				if got := sink.bytes(); !bytes.Equal(got, want) {
					t.Fatalf("size %d: after Flush %d bytes out, want %d", size, len(got), len(want))
				}
			}
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		// NB: writes larger than a buffer went through, not into one.
		if c := cap(a.buf); c > 2*size {
			t.Errorf("size %d: a buffer grew to %d bytes", size, c)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if got := sink.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("size %d: %d bytes out, want %d (or not the same)", size, len(got), len(want))
		}
		if sink.writes >= 2000 {
			t.Errorf("size %d: %d writes reached the sink for 2000 calls: not buffered", size, sink.writes)
		}
	}
}

// Ensure that the underlying writer's error comes back from a later Write
// and from Flush, and that nothing is written after it.
func TestAsyncWriterError(t *testing.T) {
	sink := slowSink{failAt: 50000}
	a := NewAsyncWriter(&sink, 4096)
	p := bytes.Repeat([]byte("x"), 1000)
	var werr error
	for range 200 {
		if _, werr = a.Write(p); werr != nil {
			break
		}
	}
	if !errors.Is(werr, errSinkFull) {
		t.Fatalf("Write after the sink failed: %v, want %v", werr, errSinkFull)
	}
	if err := a.Flush(); !errors.Is(err, errSinkFull) {
		t.Fatalf("Flush: %v, want %v", err, errSinkFull)
	}
	if err := a.Close(); !errors.Is(err, errSinkFull) {
		t.Fatalf("Close: %v, want %v", err, errSinkFull)
	}
	if n := len(sink.bytes()); n != 50000 {
		t.Fatalf("%d bytes reached the sink, want the 50000 it took before failing", n)
	}
}

// Ensure that Close without Flush drops what is buffered, ends the
// goroutine, and that the writer then refuses writes.
func TestAsyncWriterClose(t *testing.T) {
	var sink slowSink
	a := NewAsyncWriter(&sink, 4096)
	if _, err := a.Write([]byte("kept in the buffer")); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.bytes()); n != 0 {
		t.Fatalf("%d bytes written by Close, want none (it drops the buffer)", n)
	}
	if _, err := a.Write([]byte("late")); !errors.Is(err, errAsyncClosed) {
		t.Fatalf("Write after Close: %v, want %v", err, errAsyncClosed)
	}
	if err := a.Flush(); !errors.Is(err, errAsyncClosed) {
		t.Fatalf("Flush after Close: %v, want %v", err, errAsyncClosed)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
