package extsort

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a Fixed sorter yields exactly the sorted values, repeats
// included, whether they spilled to runs or not.
func TestFixedSorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, budget := range []int{1 << 20, 64 << 10} { // in memory; many runs
		fs := vfs.NewMem()
		s := NewUint64(fs, "", "values", budget)
		var all []uint64
		for range 50000 {
			v := rng.Uint64N(1 << 20) // repeats included
			all = append(all, v)
			if err := s.Add(v); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(all)
		var got []uint64
		if err := s.Iterate(func(v uint64) error {
			got = append(got, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if spilled := s.Runs() > 1; spilled != (budget < 1<<20) {
			t.Fatalf("budget %d: %d runs", budget, s.Runs())
		}
		if !slices.Equal(got, all) {
			t.Fatalf("budget %d: %d values out, %d in, or out of order", budget, len(got), len(all))
		}
		s.Close()
		if left, _ := fs.List(""); len(left) != 0 {
			t.Fatalf("budget %d: files left after close: %v", budget, left)
		}
	}
}

// BenchmarkFixedIterate measures reading back 1 Mi uint64 values (Pairs'
// candidates) spilled to 32 runs: the generic Merge.
func BenchmarkFixedIterate(b *testing.B) {
	const n = 1 << 20
	s := NewUint64(vfs.NewMem(), "", "values", n/16*8)
	rng := rand.New(rand.NewPCG(1, 1))
	for range n {
		if err := s.Add(rng.Uint64()); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n * 8)
	for range b.N {
		got := 0
		if err := s.Iterate(func(uint64) error { got++; return nil }); err != nil || got != n {
			b.Fatal(got, err)
		}
	}
	b.ReportMetric(float64(s.Runs()), "runs")
}
