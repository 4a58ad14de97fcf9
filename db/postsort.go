package db

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// postEnt is one posting of a load: a bucket (band, bucket hash) and a doc
// number with the removal flag in its low bit. Fixed-size entries sort by
// integer comparisons: a generic sorter over encoded keys measured 5x
// slower on a load's millions of postings.
type postEnt struct {
	bucket uint64
	doc    uint64 // doc<<1 | remove
	band   uint16
}

func comparePostEnt(a, b postEnt) int {
	return cmp.Or(cmp.Compare(a.band, b.band), cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.doc, b.doc))
}

const postEntSize = 18 // on disk: band 2, bucket 8, doc 8

// postSorter sorts postEnts within a memory budget, spilling sorted runs.
type postSorter struct {
	fs   vfs.FS
	dir  string
	max  int
	ents []postEnt
	runs []string
}

func newPostSorter(fs vfs.FS, dir string, budget int) *postSorter {
	return &postSorter{fs: fs, dir: dir, max: max(budget/24, 4096)}
}

func (s *postSorter) add(band int, bucket, doc uint64, remove bool) error {
	if len(s.ents) == s.max {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if s.ents == nil {
		// NB: allocated once at full size: growing by append would hold
		// the old and the new array at once, twice the budget at a peak.
		s.ents = make([]postEnt, 0, s.max)
	}
	d := doc << 1
	if remove {
		d |= 1
	}
	s.ents = append(s.ents, postEnt{bucket, d, uint16(band)})
	return nil
}

func (s *postSorter) spill() error {
	slices.SortFunc(s.ents, comparePostEnt)
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("postings-%06d.run", len(s.runs)))
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [postEntSize]byte
	for _, e := range s.ents {
		binary.BigEndian.PutUint16(b[:], e.band)
		binary.BigEndian.PutUint64(b[2:], e.bucket)
		binary.BigEndian.PutUint64(b[10:], e.doc)
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.ents = s.ents[:0]
	return nil
}

type postRun struct {
	r   *bufio.Reader
	c   io.Closer
	cur postEnt
}

func (r *postRun) next() (bool, error) {
	var b [postEntSize]byte
	if _, err := io.ReadFull(r.r, b[:]); err == io.EOF {
		return false, nil
	} else if err != nil {
		return false, err
	}
	r.cur = postEnt{band: binary.BigEndian.Uint16(b[:]), bucket: binary.BigEndian.Uint64(b[2:]), doc: binary.BigEndian.Uint64(b[10:])}
	return true, nil
}

type postHeap []*postRun

func (h postHeap) Len() int           { return len(h) }
func (h postHeap) Less(i, j int) bool { return comparePostEnt(h[i].cur, h[j].cur) < 0 }
func (h postHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *postHeap) Push(x any)        { *h = append(*h, x.(*postRun)) }
func (h *postHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// iterate calls fn for every posting in (band, bucket, doc) order.
func (s *postSorter) iterate(fn func(e postEnt) error) error {
	if len(s.runs) == 0 {
		slices.SortFunc(s.ents, comparePostEnt)
		for _, e := range s.ents {
			if err := fn(e); err != nil {
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
	s.ents = nil
	h := &postHeap{}
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
		r := &postRun{r: bufio.NewReaderSize(f, 256<<10), c: f}
		if ok, err := r.next(); err != nil || !ok {
			f.Close()
			if err != nil {
				return err
			}
			continue
		}
		heap.Push(h, r)
	}
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(r.cur); err != nil {
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

func (s *postSorter) close() {
	s.ents = nil
	for _, p := range s.runs {
		s.fs.Remove(p)
	}
	s.runs = nil
}

// u64Sorter sorts uint64 values within a memory budget, spilling sorted
// runs; Pairs uses it for candidate pairs (a<<32 | b).
type u64Sorter struct {
	fs   vfs.FS
	dir  string
	max  int
	vals []uint64
	runs []string
}

func newU64Sorter(fs vfs.FS, dir string, budget int) *u64Sorter {
	return &u64Sorter{fs: fs, dir: dir, max: max(budget/8, 4096)}
}

func (s *u64Sorter) add(v uint64) error {
	if s.vals == nil {
		s.vals = make([]uint64, 0, s.max) // NB: once, at full size (see postSorter.add)
	}
	if len(s.vals) == s.max {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.vals = append(s.vals, v)
	return nil
}

func (s *u64Sorter) spill() error {
	slices.Sort(s.vals)
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("u64-%06d.run", len(s.runs)))
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [8]byte
	for _, v := range s.vals {
		binary.BigEndian.PutUint64(b[:], v)
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.vals = s.vals[:0]
	return nil
}

type u64Run struct {
	r   *bufio.Reader
	c   io.Closer
	cur uint64
}

func (r *u64Run) next() (bool, error) {
	var b [8]byte
	if _, err := io.ReadFull(r.r, b[:]); err == io.EOF {
		return false, nil
	} else if err != nil {
		return false, err
	}
	r.cur = binary.BigEndian.Uint64(b[:])
	return true, nil
}

type u64Heap []*u64Run

func (h u64Heap) Len() int           { return len(h) }
func (h u64Heap) Less(i, j int) bool { return h[i].cur < h[j].cur }
func (h u64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *u64Heap) Push(x any)        { *h = append(*h, x.(*u64Run)) }
func (h *u64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// iterate calls fn for every value in ascending order (repeats included).
func (s *u64Sorter) iterate(fn func(v uint64) error) error {
	if len(s.runs) == 0 {
		slices.Sort(s.vals)
		for _, v := range s.vals {
			if err := fn(v); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.vals) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.vals = nil
	h := &u64Heap{}
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
		r := &u64Run{r: bufio.NewReaderSize(f, 256<<10), c: f}
		if ok, err := r.next(); err != nil || !ok {
			f.Close()
			if err != nil {
				return err
			}
			continue
		}
		heap.Push(h, r)
	}
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(r.cur); err != nil {
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

func (s *u64Sorter) close() {
	s.vals = nil
	for _, p := range s.runs {
		s.fs.Remove(p)
	}
	s.runs = nil
}
