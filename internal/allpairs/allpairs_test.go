package allpairs

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that the prefix-filter join finds exactly the pairs that
// comparing every pair finds, on random sets with many near-duplicates.
func TestJoinEqualsBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		var sets [][]uint64
		for range 150 {
			var s []uint64
			if len(sets) > 0 && rng.IntN(2) == 0 {
				s = slices.Clone(sets[rng.IntN(len(sets))])
				for range rng.IntN(4) {
					if len(s) > 0 && rng.IntN(2) == 0 {
						s = slices.Delete(s, 0, 1)
					} else {
						s = append(s, uint64(rng.IntN(60)))
					}
				}
			} else {
				for range rng.IntN(25) {
					s = append(s, uint64(rng.IntN(60)))
				}
			}
			slices.Sort(s)
			sets = append(sets, slices.Compact(s))
		}
		for _, th := range []float64{0.3, 0.5, 0.8, 0.9, 1} {
			if got, want := Join(sets, th), Brute(sets, th); !slices.Equal(got, want) {
				t.Fatalf("round %d t=%v: Join found %d pairs, Brute %d", round, th, len(got), len(want))
			}
		}
	}
}
