package extsort

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that Merge yields every value of its sorted sources in order,
// for any number of sources (none, one, many, some empty), and stops at
// the first error of fn.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, k := range []int{0, 1, 2, 3, 7, 64} {
		var srcs []Source[uint64]
		var want []uint64
		for range k {
			vals := make([]uint64, rng.IntN(200)) // some empty
			for i := range vals {
				vals[i] = rng.Uint64N(500) // repeats across sources
			}
			slices.Sort(vals)
			want = append(want, vals...)
			srcs = append(srcs, &sliceSource[uint64]{vals})
		}
		slices.Sort(want)
		var got []uint64
		if err := Merge(srcs, cmp.Compare[uint64], func(v uint64) error {
			got = append(got, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d sources: %d values out, %d in, or out of order", k, len(got), len(want))
		}
	}
	stop := errors.New("stop")
	n := 0
	err := Merge([]Source[uint64]{&sliceSource[uint64]{[]uint64{1, 3}}, &sliceSource[uint64]{[]uint64{2, 4}}}, cmp.Compare[uint64], func(uint64) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("Merge returned %v after %d values, want stop after 2", err, n)
	}
}
