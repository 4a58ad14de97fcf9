package db

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// extSorter sorts (key, seq, kind, value) entries by key then seq within a
// memory budget: entries accumulate in an arena, and each time it reaches
// the budget they are sorted and written to a run file; iterate merges the
// runs and what is left in memory.
type extSorter struct {
	fs     vfs.FS
	dir    string
	name   string
	budget int
	arena  []byte
	ents   []sortEnt
	runs   []string
}

type sortEnt struct {
	off, klen, vlen int
	seq             uint64
	kind            byte
}

func newExtSorter(fs vfs.FS, dir, name string, budget int) *extSorter {
	return &extSorter{fs: fs, dir: dir, name: name, budget: max(budget, 64<<10)}
}

func (s *extSorter) key(e sortEnt) []byte { return s.arena[e.off : e.off+e.klen] }
func (s *extSorter) value(e sortEnt) []byte {
	return s.arena[e.off+e.klen : e.off+e.klen+e.vlen]
}

// sortEntSize is the memory of one entry besides its key and value.
const sortEntSize = 40

func (s *extSorter) add(key []byte, seq uint64, kind byte, value []byte) error {
	// NB: the budget counts the entries' bookkeeping too: with short keys
	// it is most of the memory.
	if s.ents == nil {
		// NB: allocated once at full size (pages untouched until used):
		// growing by append would hold two copies at a peak.
		s.ents = make([]sortEnt, 0, s.budget/2/sortEntSize)
		s.arena = make([]byte, 0, s.budget/2)
	}
	if len(s.arena)+len(key)+len(value)+(len(s.ents)+1)*sortEntSize > s.budget && len(s.ents) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	off := len(s.arena)
	s.arena = append(append(s.arena, key...), value...)
	s.ents = append(s.ents, sortEnt{off, len(key), len(value), seq, kind})
	return nil
}

func (s *extSorter) sortMem() {
	slices.SortFunc(s.ents, func(a, b sortEnt) int {
		return cmp.Or(bytes.Compare(s.key(a), s.key(b)), cmp.Compare(a.seq, b.seq))
	})
}

// spill writes the sorted in-memory entries to a new run file.
func (s *extSorter) spill() error {
	s.sortMem()
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("%s-%06d.run", s.name, len(s.runs)))
	err := writeRun(s.fs, path, func(w *bufio.Writer) {
		var hdr [3*binary.MaxVarintLen64 + 1]byte
		for _, e := range s.ents {
			n := binary.PutUvarint(hdr[:], uint64(e.klen))
			n += binary.PutUvarint(hdr[n:], uint64(e.vlen))
			n += binary.PutUvarint(hdr[n:], e.seq)
			hdr[n] = e.kind
			w.Write(hdr[:n+1])
			w.Write(s.arena[e.off : e.off+e.klen+e.vlen])
		}
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.arena, s.ents = s.arena[:0], s.ents[:0]
	return nil
}

// runReader reads one run file.
type runReader struct {
	r     *bufio.Reader
	c     io.Closer
	key   []byte
	value []byte
	seq   uint64
	kind  byte
}

func (r *runReader) next() (bool, error) {
	klen, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	vlen, err := binary.ReadUvarint(r.r)
	if err != nil {
		return false, err
	}
	if r.seq, err = binary.ReadUvarint(r.r); err != nil {
		return false, err
	}
	if r.kind, err = r.r.ReadByte(); err != nil {
		return false, err
	}
	buf := make([]byte, klen+vlen)
	if _, err := io.ReadFull(r.r, buf); err != nil {
		return false, err
	}
	r.key, r.value = buf[:klen], buf[klen:]
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	return cmp.Or(bytes.Compare(h[i].key, h[j].key), cmp.Compare(h[i].seq, h[j].seq)) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// iterate calls fn for every entry in (key, seq) order. The slices passed
// to fn are valid only during the call.
func (s *extSorter) iterate(fn func(key []byte, seq uint64, kind byte, value []byte) error) error {
	if len(s.runs) == 0 {
		s.sortMem()
		for _, e := range s.ents {
			if err := fn(s.key(e), e.seq, e.kind, s.value(e)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.ents) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena, s.ents = nil, nil // NB: release the budget before the merge
	h := &runHeap{}
	defer func() {
		for _, r := range *h {
			r.c.Close()
		}
	}()
	for _, path := range s.runs {
		f, err := s.fs.Open(path)
		if err != nil {
			return err
		}
		r := &runReader{r: bufio.NewReaderSize(f, 256<<10), c: f}
		ok, err := r.next()
		if err != nil {
			f.Close()
			return err
		}
		if ok {
			heap.Push(h, r)
		} else {
			f.Close()
		}
	}
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(r.key, r.seq, r.kind, r.value); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
			r.c.Close()
		}
	}
	return nil
}

// close removes the run files and releases the memory.
func (s *extSorter) close() {
	s.arena, s.ents = nil, nil
	for _, p := range s.runs {
		s.fs.Remove(p)
	}
	s.runs = nil
}
