package extsort

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Codec encodes a fixed-size value in a run file.
type Codec[T any] struct {
	Size int                 // bytes per value
	Put  func(b []byte, v T) // encodes v into b[:Size]
	Get  func(b []byte) T    // decodes b[:Size]
}

// Fixed sorts fixed-size values within a memory budget: they accumulate
// in one slice, and each time it fills they are sorted and written to a
// run file; Iterate merges the runs. Sorting plain values with an integer
// comparison measured 5x faster than sorting encoded keys.
//
// NB: the slice doubles from a small start while the old and the new
// array fit in the budget together (so runs are at least max/2 values).
// Allocated at full size up front, its pages became resident whenever the
// heap reused memory it had to zero: Pairs peaked at 812 MiB after a build
// in the same process for 16 MB of candidates, 579 MiB alone.
type Fixed[T any] struct {
	fs      vfs.FS
	dir     string
	name    string // run files are dir/name-NNNNNN.run
	max     int    // values held in memory
	compare func(a, b T) int
	codec   Codec[T]
	vals    []T
	runs    []string
}

// NewFixed returns a sorter that holds about budget bytes of values (at
// least 4,096 values) in memory and writes its runs as
// dir/name-NNNNNN.run.
func NewFixed[T any](fs vfs.FS, dir, name string, budget int, compare func(a, b T) int, c Codec[T]) *Fixed[T] {
	var zero T
	return &Fixed[T]{
		fs: fs, dir: dir, name: name, compare: compare, codec: c,
		max: max(budget/max(1, int(unsafe.Sizeof(zero))), 4096),
	}
}

// NewUint64 returns a Fixed sorter of uint64 values.
func NewUint64(fs vfs.FS, dir, name string, budget int) *Fixed[uint64] {
	return NewFixed(fs, dir, name, budget, cmp.Compare[uint64], Codec[uint64]{
		Size: 8,
		Put:  func(b []byte, v uint64) { binary.BigEndian.PutUint64(b, v) },
		Get:  binary.BigEndian.Uint64,
	})
}

// Add adds a value.
func (s *Fixed[T]) Add(v T) error {
	if len(s.vals) == cap(s.vals) {
		if c := min(max(2*cap(s.vals), 4096), s.max-cap(s.vals)); c > cap(s.vals) {
			s.vals = append(make([]T, 0, c), s.vals...)
		} else if err := s.spill(); err != nil {
			return err
		}
	}
	s.vals = append(s.vals, v)
	return nil
}

func (s *Fixed[T]) spill() error {
	s.sortVals()
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("%s-%06d.run", s.name, len(s.runs)))
	err := writeRun(s.fs, path, func(w *bufio.Writer) {
		b := make([]byte, s.codec.Size)
		for _, v := range s.vals {
			s.codec.Put(b, v)
			w.Write(b)
		}
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.vals = s.vals[:0]
	return nil
}

// Runs returns how many runs the sorter has written.
func (s *Fixed[T]) Runs() int { return len(s.runs) }

// Iterate calls fn for every value in order (repeats included): the
// values in memory when nothing spilled, otherwise a merge of the runs
// (the values left in memory spilled first, and the memory released).
func (s *Fixed[T]) Iterate(fn func(v T) error) error {
	if len(s.runs) == 0 {
		s.sortVals()
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
	s.vals = nil // NB: release the budget before the merge
	srcs := make([]Source[T], 0, len(s.runs))
	var files []vfs.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, path := range s.runs {
		f, err := s.fs.Open(path)
		if err != nil {
			return err
		}
		files = append(files, f)
		srcs = append(srcs, newFixedReader(f, s.codec.Size, s.codec.Get))
	}
	return Merge(srcs, s.compare, fn)
}

// sortVals sorts the values in memory.
func (s *Fixed[T]) sortVals() {
	// NB: plain integers sort with slices.Sort, which inlines the
	// comparison instead of calling s.compare through a function value.
	if v, ok := any(s.vals).([]uint64); ok {
		slices.Sort(v)
		return
	}
	slices.SortFunc(s.vals, s.compare)
}

// Close removes the run files and releases the memory.
func (s *Fixed[T]) Close() {
	s.vals = nil
	for _, p := range s.runs {
		s.fs.Remove(p)
	}
	s.runs = nil
}
