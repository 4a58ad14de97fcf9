package db

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a sealed fixedSorter yields, for any range, exactly the
// sorted values in it, whether the values spilled to runs or not, and that
// ranges can be read at once from several goroutines.
func TestFixedSorterRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, budget := range []int{1 << 20, 64 << 10} { // in memory; many runs
		fs := vfs.NewMem()
		s := newU64Sorter(fs, "", budget)
		var all []uint64
		for range 50000 {
			v := rng.Uint64N(1 << 20) // repeats included
			all = append(all, v)
			if err := s.add(v); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(all)
		if err := s.seal(); err != nil {
			t.Fatal(err)
		}
		if budget < 1<<20 && len(s.runs) < 2 {
			t.Fatalf("budget %d: %d runs, want several", budget, len(s.runs))
		}
		bounds := []*uint64{nil}
		for range 6 {
			v := rng.Uint64N(1 << 20)
			bounds = append(bounds, &v)
		}
		bounds = append(bounds, nil)
		got := make([][]uint64, len(bounds)-1)
		done := make(chan error, len(got))
		for i := range got {
			go func() {
				done <- s.fixedSorter.iterateRange(bounds[i], bounds[i+1], func(v uint64) error {
					got[i] = append(got[i], v)
					return nil
				})
			}()
		}
		for range got {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for i := range got {
			var want []uint64
			for _, v := range all {
				if (bounds[i] == nil || v >= *bounds[i]) && (bounds[i+1] == nil || v < *bounds[i+1]) {
					want = append(want, v)
				}
			}
			if !slices.Equal(got[i], want) {
				t.Fatalf("budget %d, range %d: %d values, want %d", budget, i, len(got[i]), len(want))
			}
		}
		s.close()
	}
}
