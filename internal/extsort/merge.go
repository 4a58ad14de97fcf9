package extsort

// A Source is one sorted input of a [Merge].
type Source[T any] interface {
	// Next returns the source's next values, in order: at least one, or
	// none at its end. They may alias the source's buffers until the
	// following call.
	Next() ([]T, error)
}

// Merge calls fn for every value of srcs in the order of compare (srcs
// each sorted by it), with a binary heap of the sources ordered by their
// current value. The value passed to fn is valid only during the call. It
// stops at the first error of a source or of fn.
//
// NB: the sources hand out batches, so a value costs no call into its
// source, but the comparisons go through a function value, which generic
// code cannot inline. On 16 runs of a load's postings this merge took
// 1.4x as long as a hand-written heap (BenchmarkMergeBand: 10.5 ms
// against 7.5 ms for 262,144 entries; a tournament tree was no faster),
// so BandSorter, whose merge reads every posting of a load that spilled,
// keeps its own (mergeBandEntries). KeySorter and Fixed, which merged
// through container/heap's interface calls before, use this one, and
// read back faster than with their old heaps: 0.73x the time for 32 runs
// of uint64 (BenchmarkFixedIterate), 0.63x for a load's ids
// (BenchmarkKeySorterIterate, which also spills fewer runs now).
func Merge[T any](srcs []Source[T], compare func(a, b T) int, fn func(v T) error) error {
	k := len(srcs)
	if k == 0 {
		return nil
	}
	bufs := make([][]T, k) // bufs[i]: source i's unread values; empty once it ends
	for i, s := range srcs {
		b, err := s.Next()
		if err != nil {
			return err
		}
		bufs[i] = b
	}
	// h is a binary min-heap of the sources that have values left.
	h := make([]int, 0, k)
	for i := range k {
		if len(bufs[i]) > 0 {
			h = append(h, i)
		}
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			if r := l + 1; r < len(h) && compare(bufs[h[r]][0], bufs[h[l]][0]) < 0 {
				l = r
			}
			if compare(bufs[h[l]][0], bufs[h[i]][0]) >= 0 {
				return
			}
			h[i], h[l] = h[l], h[i]
			i = l
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		w := h[0]
		b := bufs[w]
		if err := fn(b[0]); err != nil {
			return err
		}
		if b = b[1:]; len(b) == 0 {
			var err error
			if b, err = srcs[w].Next(); err != nil {
				return err
			}
		}
		bufs[w] = b
		if len(b) == 0 {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		if len(h) > 1 {
			down(0)
		}
	}
	return nil
}

// sliceSource is a sorted slice in memory as a Source.
type sliceSource[T any] struct{ vals []T }

func (s *sliceSource[T]) Next() ([]T, error) {
	v := s.vals
	s.vals = nil
	return v, nil
}
